package cdcmonitor;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;

/**
 * One record decoded: its value and key read in one streaming pass each, and every per-record fact
 * the checks read derived from them (decoding/events.py documents each column).
 */
final class Decoded {
    /** The columns this decoder can return; the configuration says which, in which order. */
    static final String[] COLUMNS = {
        "kind", "decode_error", "decode_detail", "decode_snippet", "flavour", "server", "db", "schema_name",
        "table_name", "table", "op", "ts_ms", "ts_ms_raw", "source_ts_ms", "ts_us", "source_ts_us", "source_ts_raw",
        "snapshot", "snapshot_marker", "txn_id", "txn_key", "txn_total_order", "txn_collection_order", "position",
        "source", "before", "after", "value_schema", "key_schema", "key_payload", "status", "marker_id",
        "marker_key", "has_message", "has_update_description", "update_hash", "marker_event_count",
        "marker_collections", "ddl_tables", "verdicts", "value_schema_hash", "key_schema_hash", "key_canonical",
        "avro_json", "foreign_producer",
    };

    private final DecoderConfig cfg;
    final String topic;
    private final String key;
    private final String value;
    Envelope e;  // the fields that apply: the payload's when enveloped
    String valueSchema;
    String keySchema;
    String keyPayload;
    String keyServerName;
    String error;
    String detail;
    private final String preMessage;
    private final long[] schemaHash = new long[1];
    Long valueSchemaHash;
    Long keySchemaHash;
    boolean avroJson;  // the value was Avro's JSON encoding, read as the JSON converter's (AvroJson)
    private int payloadFrom = -1;
    private int payloadTo = -1;
    private String parsed;  // the text the value's parser reads: the value, or the value with its known schema cut out

    /** The JSON converter's value schema last read (any thread): a value written with the same text is not tokenized again. */
    private record SchemaMemo(String text, long hash) {
    }

    private static volatile SchemaMemo lastSchema;
    private static final String SCHEMA_FIRST = "{\"schema\":";

    /** {@code preError}: what an Avro stage before the decoder could not read (decoding/avro_wire.py), or null. */
    Decoded(DecoderConfig cfg, String topic, String key, String value, String preError, String preDetail,
            String preMessage) {
        this.cfg = cfg;
        this.topic = topic;
        this.key = key;
        this.value = value;
        this.error = preError;
        this.detail = preError == null ? null : preDetail;
        this.preMessage = preError == null ? null : preMessage;
    }

    void decode() {
        String schema = knownSchema();
        Envelope top = new Envelope();
        top.text = parsed;
        Envelope payload = null;
        boolean valueJson = false;
        boolean valueShape = false;
        if (value != null) {
            try (JsonParser p = JsonText.FACTORY.createParser(parsed)) {
                if (p.nextToken() != JsonToken.START_OBJECT) {
                    valueJson = true;
                } else {
                    while (p.nextToken() == JsonToken.FIELD_NAME) {
                        String name = p.currentName();
                        p.nextToken();
                        if (name.equals("schema")) {
                            boolean object = p.currentToken() == JsonToken.START_OBJECT;
                            schema = JsonText.raw(p, parsed, schemaHash);
                            if (object) {
                                lastSchema = new SchemaMemo(schema, schemaHash[0]);
                            }
                        } else if (name.equals("payload")) {
                            payloadFrom = (int) p.currentTokenLocation().getCharOffset();
                            payload = payload(p, top);
                            payloadTo = (int) p.currentLocation().getCharOffset();
                        } else if (name.equals("_corrupt")) {
                            // Spark's name for a corrupt record's text: a value carrying one read as corrupt
                            top.shapeError |= p.currentToken() != JsonToken.VALUE_NULL;
                            p.skipChildren();
                        } else if (!top.read(name, p, cfg)) {
                            p.skipChildren();
                        }
                    }
                    valueJson = p.nextToken() != null;  // more than one document
                    valueSchema = payload != null ? schema : null;
                    valueSchemaHash = valueSchema == null ? null : schemaHash[0];
                    valueShape = top.shapeError || (payload != null && payload.shapeError);
                }
            } catch (IOException | RuntimeException ex) {
                valueJson = true;
            }
        }
        e = payload != null ? payload : top;
        if (valueJson) {
            e = new Envelope();  // nothing of an unreadable value is read
            valueSchema = null;
            valueSchemaHash = null;
        }
        boolean keyJson = key != null && !readKey();
        if (error != null) {
            return;  // the Avro stage's verdict stands (the texts it could not read are its bytes)
        } else if (valueJson) {
            error = cfg.jsonError;
            detail = "value";
        } else if (valueShape) {
            error = cfg.envelopeError;
            detail = "value";
        } else if (keyJson) {
            error = cfg.jsonError;
            detail = "key";
        }
    }

    private Envelope payload(JsonParser p, Envelope top) throws IOException {
        JsonToken t = p.currentToken();
        if (t == JsonToken.VALUE_NULL) {
            return null;
        }
        if (t != JsonToken.START_OBJECT) {
            top.shapeError = true;
            p.skipChildren();
            return null;
        }
        Envelope out = new Envelope();
        out.text = parsed;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            p.nextToken();
            if (!out.read(name, p, cfg)) {
                p.skipChildren();
            }
        }
        return out;
    }

    /** The key's schema and payload; false when the key is not one JSON object. */
    private boolean readKey() {
        String schema = null;
        String payload = null;
        boolean corrupt = false;
        long[] hash = new long[1];
        try (JsonParser p = JsonText.FACTORY.createParser(key)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return false;
            }
            String server = null;
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                p.nextToken();
                switch (name) {
                    case "schema" -> schema = JsonText.raw(p, key, hash);
                    case "payload" -> {
                        if (p.currentToken() == JsonToken.START_OBJECT) {
                            String[] found = new String[1];
                            payload = objectText(p, found);
                            keyServerName = found[0];
                        } else {
                            payload = JsonText.text(p);
                        }
                    }
                    case "serverName" -> {
                        server = JsonText.text(p);
                    }
                    case "_corrupt" -> {
                        corrupt |= p.currentToken() != JsonToken.VALUE_NULL;
                        p.skipChildren();
                    }
                    default -> p.skipChildren();
                }
            }
            if (p.nextToken() != null || corrupt) {
                return false;
            }
            if (payload != null) {
                keySchema = schema;
                keySchemaHash = schema == null ? null : hash[0];
                keyPayload = payload;
            } else {
                keyPayload = key;
                keyServerName = server;
            }
            return true;
        } catch (IOException | RuntimeException ex) {
            return false;
        }
    }

    /** An object's compact text, noting its serverName field (a heartbeat's key). */
    private static String objectText(JsonParser p, String[] serverName) throws IOException {
        java.io.StringWriter out = new java.io.StringWriter(64);
        try (com.fasterxml.jackson.core.JsonGenerator g = JsonText.FACTORY.createGenerator(out)) {
            g.writeStartObject();
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                g.writeFieldName(name);
                p.nextToken();
                if (name.equals("serverName")) {
                    serverName[0] = JsonText.text(p);
                }
                JsonText.copy(p, g);
            }
            g.writeEndObject();
        }
        return out.toString();
    }

    /**
     * A value written by the JSON converter with the schema last read ({@code {"schema":<that text>,...}},
     * compared in place, as bytes): its schema and hash, the parser given the rest; else null, the parser
     * given the value. A topic's values share one schema text, so its records tokenize their payload only.
     */
    private String knownSchema() {
        parsed = value;
        SchemaMemo m = lastSchema;
        if (value == null || m == null || !value.startsWith(SCHEMA_FIRST)) {
            return null;
        }
        int end = SCHEMA_FIRST.length() + m.text.length();
        if (end >= value.length() || value.charAt(end) != ','
                || !value.regionMatches(SCHEMA_FIRST.length(), m.text, 0, m.text.length())) {
            return null;
        }
        parsed = "{".concat(value.substring(end + 1));
        schemaHash[0] = m.hash;
        return m.text;
    }

    /** The value's payload object as a tree (for its embedded schema's check), or null. */
    com.fasterxml.jackson.databind.JsonNode payloadTree() {
        if (payloadFrom < 0 || payloadTo <= payloadFrom) {
            return null;
        }
        try {
            return TREES.readTree(parsed.substring(payloadFrom, payloadTo));
        } catch (IOException | RuntimeException ex) {
            return null;
        }
    }

    /** The key's payload as a tree, or null. */
    com.fasterxml.jackson.databind.JsonNode keyPayloadTree() {
        try {
            com.fasterxml.jackson.databind.JsonNode k = TREES.readTree(key);
            return k == null ? null : k.get("payload");
        } catch (IOException | RuntimeException ex) {
            return null;
        }
    }

    private static final com.fasterxml.jackson.databind.ObjectMapper TREES =
            new com.fasterxml.jackson.databind.ObjectMapper(JsonText.FACTORY);

    String kind() {
        if (value == null) {
            return "tombstone";
        }
        if (cfg.transactionTopic.matcher(topic).find()) {
            return "transaction";
        }
        if (topic.startsWith(cfg.heartbeatPrefix)) {
            return "heartbeat";
        }
        if (("BEGIN".equals(e.status) || "END".equals(e.status)) && e.op == null) {
            return "transaction";
        }
        if (e.op == null && (e.databaseName != null || e.ddl != null || e.tableChanges != null)) {
            return "schema_change";
        }
        return "data";
    }

    String txnKey(String id) {
        if (id == null) {
            return null;
        }
        Matcher m = cfg.pgTxnId.matcher(id);
        return m.find() ? m.group(1) : id;
    }

    // the derived facts (derive())
    String kind;
    String flavour;
    Long tsMs;
    Long sourceTsMs;
    String sourceTsRaw;
    Long tsUs;
    Long sourceTsUs;
    boolean snapshot;
    String snapshotMarker;
    String status;
    String markerId;

    /** Derives the facts the columns and the verdicts read. */
    void derive() {
        kind = kind();
        Connectors c = new Connectors(cfg, e, valueSchema);
        flavour = c.flavour();
        tsMs = JsonText.toLong(e.tsMs);
        Long microMs = c.microMs();
        sourceTsMs = c.sourceTsMs(microMs);
        sourceTsRaw = c.sourceTsRaw(microMs);
        tsUs = c.tsUs();
        sourceTsUs = c.sourceTsUs();
        snapshot = c.snapshot();
        snapshotMarker = c.snapshotMarker();
        boolean transaction = kind.equals("transaction");
        status = transaction ? e.status : null;
        markerId = transaction ? e.id : null;
    }

    boolean dataEvent() {
        return kind.equals("data") && error == null;
    }

    /** A data event that is a Debezium envelope (not a flattened row or a wrapper object). */
    boolean envelope() {
        return dataEvent() && !(e.op == null && e.source == null && e.before == null && e.after == null && e.message == null);
    }

    /**
     * A change event written in Debezium's envelope by another producer (the column
     * {@code foreign_producer}, which the checks read through decoding/events.py): one that gives no sign
     * of being Debezium's, no source block or a source block with neither {@code connector} nor
     * {@code version} (Debezium's always names both). Its source-based rules are not judged: one note a
     * topic says so instead. A record that names a connector or a version is Debezium's whatever it
     * lacks: a missing source time is its fault ({@code missing_source_field}, {@code invalid_source_ts}).
     */
    boolean foreignProducer() {
        return envelope() && (e.source == null
                || (e.source(cfg, "connector") == null && e.source(cfg, "version") == null));
    }

    boolean snapshotEvent() {
        return dataEvent() && ("r".equals(e.op) || snapshot);
    }

    boolean changeEvent() {
        return dataEvent() && ("c".equals(e.op) || "u".equals(e.op) || "d".equals(e.op)) && !"r".equals(e.op) && !snapshot;
    }

    /** The output row: the configuration's columns in its order. */
    Row row(List<Row> verdicts) {
        Object[] out = new Object[cfg.fields.length];
        Connectors c = new Connectors(cfg, e, valueSchema);
        String heartbeatServer = kind.equals("heartbeat") ? c.heartbeatServer(topic, keyServerName) : null;
        Object[] all = {
            kind, error, detail, snippet(), flavour, c.server(kind, topic, heartbeatServer), c.src("db"),
            c.src("schema"), c.tableName(), kind.equals("data") ? c.table(flavour, topic) : null,
            e.op, tsMs, e.tsMs, sourceTsMs, tsUs, sourceTsUs, sourceTsRaw, snapshot, snapshotMarker,
            e.txId, txnKey(e.txId), JsonText.toLong(e.txTotalOrder), JsonText.toLong(e.txCollectionOrder),
            c.position(flavour), sourceRow(), image(e.before), image(e.after), valueSchema, keySchema, keyPayload,
            status, markerId, txnKey(markerId),
            e.message != null, e.patch != null || e.updateDescription != null, updateHash(),
            JsonText.toLong(e.eventCount), collections(), kind.equals("schema_change") ? c.ddlTables() : null,
            verdicts, valueSchemaHash, keySchemaHash, JsonText.canonicalFlatObject(keyPayload), avroJson,
            foreignProducer(),
        };
        for (int k = 0; k < all.length; k++) {
            int slot = cfg.slots[k];
            if (slot >= 0) {
                out[slot] = all[k];
            }
        }
        return RowFactory.create(out);
    }

    /** The source block's fields the configuration asks for, in its order (null without a source block). */
    private Row sourceRow() {
        if (e.source == null) {
            return null;
        }
        if (cfg.sourceOut.length == e.source.length) {
            return RowFactory.create((Object[]) e.source);
        }
        Object[] out = new Object[cfg.sourceOut.length];
        for (int i = 0; i < out.length; i++) {
            out[i] = e.source[cfg.sourceOut[i]];
        }
        return RowFactory.create(out);
    }

    /** A row image as the configuration asks: its compact text, or that text's digest. */
    private Object image(String text) {
        return text == null || !cfg.imageDigests ? text : (Object) digest(text);
    }

    /** FNV-1a 64 over texts (null as \u0001, each ended by \uFFFF), only ever compared for equality. */
    static long digest(String... texts) {
        long h = 0xcbf29ce484222325L;
        for (String s : texts) {
            String t = s == null ? "\u0001" : s;
            for (int i = 0; i < t.length(); i++) {
                h = (h ^ t.charAt(i)) * 0x100000001b3L;
            }
            h = (h ^ 0xFFFF) * 0x100000001b3L;
        }
        return h;
    }

    /** The start of what could not be decoded: the Avro stage's message, else the text's first characters. */
    String snippet() {
        if (error == null) {
            return null;
        }
        if (preMessage != null) {
            return preMessage;
        }
        return JsonText.prefix("key".equals(detail) ? key : value == null ? "" : value, cfg.snippet);
    }

    private Long updateHash() {
        if (e.patch == null && e.updateDescription == null) {
            return null;
        }
        return digest(e.patch, e.updateDescription);
    }

    private List<Row> collections() {
        if (e.dataCollections == null) {
            return null;
        }
        List<Row> out = new ArrayList<>(e.dataCollections.size());
        for (String[] c : e.dataCollections) {
            out.add(c == null ? null : RowFactory.create(c[0], JsonText.toLong(c[1])));
        }
        return out;
    }
}
