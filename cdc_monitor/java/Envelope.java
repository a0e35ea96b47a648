package cdcmonitor;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;

/**
 * The fields of a change event, a transaction marker or a schema change, read from an envelope's
 * {@code payload} or, without a schema wrapper, from the value's top level. Scalars are kept as
 * text (typed afterwards, so a number sent as a string never fails the record); row images,
 * schemas and DDL parts as their JSON text. A known field of the wrong JSON kind (a {@code source}
 * that is not an object) makes the record's shape wrong: {@link #shapeError}.
 */
final class Envelope {
    String before;
    String after;
    String patch;
    String updateDescription;
    String op;
    String tsMs;
    String tsUs;
    String tsNs;
    String[] source;  // DecoderConfig.sourceFields' order; null: absent or JSON null
    String txId;
    String txTotalOrder;
    String txCollectionOrder;
    boolean hasTransaction;
    String message;
    String status;
    String id;
    String eventCount;
    List<String[]> dataCollections;  // [data_collection, event_count]; null: absent
    String databaseName;
    String schemaName;
    String ddl;
    String tableChanges;
    boolean shapeError;
    String text;  // the value text these fields are read from (row images are spans of it where compact)

    /** Reads the current field's value into this envelope; false when the name is not one of its fields. */
    boolean read(String name, JsonParser p, DecoderConfig cfg) throws IOException {
        switch (name) {
            case "before" -> before = JsonText.text(p, text);
            case "after" -> after = JsonText.text(p, text);
            case "patch" -> patch = JsonText.text(p, text);
            case "updateDescription" -> updateDescription = JsonText.text(p, text);
            case "op" -> op = JsonText.text(p);
            case "ts_ms" -> tsMs = JsonText.text(p);
            case "ts_us" -> tsUs = JsonText.text(p);
            case "ts_ns" -> tsNs = JsonText.text(p);
            case "message" -> message = JsonText.text(p, text);
            case "status" -> status = JsonText.text(p);
            case "id" -> id = JsonText.text(p);
            case "event_count" -> eventCount = JsonText.text(p);
            case "databaseName" -> databaseName = JsonText.text(p);
            case "schemaName" -> schemaName = JsonText.text(p);
            case "ddl" -> ddl = JsonText.text(p);
            case "tableChanges" -> tableChanges = JsonText.text(p, text);
            case "source" -> source = object(p, cfg.sourceFields);
            case "transaction" -> {
                String[] t = object(p, TRANSACTION);
                hasTransaction = t != null;
                txId = t == null ? null : t[0];
                txTotalOrder = t == null ? null : t[1];
                txCollectionOrder = t == null ? null : t[2];
            }
            case "data_collections" -> dataCollections = collections(p);
            default -> {
                return false;
            }
        }
        return true;
    }

    static final String[] TRANSACTION = {"id", "total_order", "data_collection_order"};
    private static final String[] COLLECTION = {"data_collection", "event_count"};

    /** An object's named fields as text, in ``names``' order; null for JSON null; a wrong kind is a shape error. */
    private String[] object(JsonParser p, String[] names) throws IOException {
        JsonToken t = p.currentToken();
        if (t == JsonToken.VALUE_NULL) {
            return null;
        }
        if (t != JsonToken.START_OBJECT) {
            shapeError = true;
            p.skipChildren();
            return null;
        }
        String[] out = new String[names.length];
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            p.nextToken();
            int i = indexOf(names, name);
            if (i >= 0) {
                out[i] = JsonText.text(p);
            } else {
                p.skipChildren();
            }
        }
        return out;
    }

    private List<String[]> collections(JsonParser p) throws IOException {
        JsonToken t = p.currentToken();
        if (t == JsonToken.VALUE_NULL) {
            return null;
        }
        if (t != JsonToken.START_ARRAY) {
            shapeError = true;
            p.skipChildren();
            return null;
        }
        List<String[]> out = new ArrayList<>();
        while (p.nextToken() != JsonToken.END_ARRAY) {
            out.add(object(p, COLLECTION));
        }
        return out;
    }

    static int indexOf(String[] names, String name) {
        for (int i = 0; i < names.length; i++) {
            if (names[i].equals(name)) {
                return i;
            }
        }
        return -1;
    }

    /** A source field's text by name (null when absent or the name is not a source field). */
    String source(DecoderConfig cfg, String name) {
        if (source == null) {
            return null;
        }
        int i = cfg.sourceIndex(name);
        return i < 0 ? null : source[i];
    }
}
