package cdcmonitor;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * What the decoder is told by cdc-monitor's Python side, as one JSON text (decoding/decoder.py builds
 * it from vocabulary.py and the check modules): the source block's fields, the connectors and their
 * names, the topic roles, the output columns asked for. Parsed once per distinct text and cached.
 */
final class DecoderConfig {
    private static volatile DecoderConfig last;

    final String text;
    final String[] sourceFields;
    private final Map<String, Integer> sourceIndex = new HashMap<>();
    final Map<String, String> connectors = new HashMap<>();
    final String unknownFlavour;
    final Set<String> snapshotValues = new HashSet<>();
    final Pattern transactionTopic;
    final Pattern transactionServer;
    final String heartbeatPrefix;
    final Pattern heartbeatServer;
    final Pattern pgTxnId;
    final Pattern ddlTable;
    final int snippet;
    final String jsonError;
    final String envelopeError;
    final String avroError;
    final String schemaIdError;
    final List<String> genericOps;
    final Map<String, List<String>> allowedOps = new HashMap<>();
    final Set<String> messageOpFlavours = new HashSet<>();
    final Set<String> deleteKeepsAfter = new HashSet<>();
    final Set<String> deleteWithoutImages = new HashSet<>();
    final Set<String> snapshotOpsUndocumented = new HashSet<>();
    final Map<String, List<String>> requiredSource = new HashMap<>();
    final Map<String, List<String[]>> positionForms = new HashMap<>();
    private final Map<String, Pattern> patterns = new HashMap<>();
    final Set<String> skipNullCheck = new HashSet<>();
    final boolean detectAvroJson;  // recognise Avro-JSON values per record (AvroJson); off when forced either way
    final Map<String, String> avroBranches = new HashMap<>();  // a union branch's name -> its value's JSON type
    final String[] fields;  // the output columns, in order
    final boolean imageDigests;  // row images as their 64-bit digests (what the checks compare), not their texts
    final int[] sourceOut;  // the source block's fields returned, as indexes of sourceFields (all when not narrowed)
    final int[] slots;  // per Decoded.COLUMN index: its position in the output, -1 when not asked for

    private DecoderConfig(String text) {
        this.text = text;
        JsonNode c;
        try {
            c = new ObjectMapper().readTree(text);
        } catch (IOException e) {
            throw new UncheckedIOException("cdc-monitor decoder: its configuration is not JSON", e);
        }
        sourceFields = strings(c.get("source_fields"));
        for (int i = 0; i < sourceFields.length; i++) {
            sourceIndex.put(sourceFields[i], i);
        }
        for (Map.Entry<String, JsonNode> e : c.get("connectors").properties()) {
            connectors.put(e.getKey(), e.getValue().asText());
        }
        unknownFlavour = c.get("unknown_flavour").asText();
        snapshotValues.addAll(List.of(strings(c.get("snapshot_values"))));
        transactionTopic = Pattern.compile(c.get("transaction_topic_regex").asText());
        transactionServer = Pattern.compile(c.get("transaction_server_regex").asText());
        heartbeatPrefix = c.get("heartbeat_topic_prefix").asText();
        heartbeatServer = Pattern.compile(c.get("heartbeat_server_regex").asText());
        pgTxnId = Pattern.compile(c.get("pg_txn_id").asText());
        ddlTable = Pattern.compile(c.get("ddl_table").asText());
        snippet = c.get("snippet").asInt();
        jsonError = c.get("json_error").asText();
        envelopeError = c.get("envelope_error").asText();
        avroError = c.get("avro_error").asText();
        schemaIdError = c.get("schema_id_error").asText();
        genericOps = List.of(strings(c.get("generic_ops")));
        for (Map.Entry<String, JsonNode> e : c.get("allowed_ops").properties()) {
            allowedOps.put(e.getKey(), List.of(strings(e.getValue())));
        }
        skipNullCheck.addAll(List.of(strings(c.get("skip_null_check"))));
        messageOpFlavours.addAll(List.of(strings(c.get("message_op_flavours"))));
        deleteKeepsAfter.addAll(List.of(strings(c.get("delete_keeps_after"))));
        deleteWithoutImages.addAll(List.of(strings(c.get("delete_without_images"))));
        snapshotOpsUndocumented.addAll(List.of(strings(c.get("snapshot_ops_undocumented"))));
        for (Map.Entry<String, JsonNode> e : c.get("required_source").properties()) {
            requiredSource.put(e.getKey(), List.of(strings(e.getValue())));
        }
        for (Map.Entry<String, JsonNode> e : c.get("position_forms").properties()) {
            java.util.ArrayList<String[]> forms = new java.util.ArrayList<>();
            for (JsonNode form : e.getValue()) {
                String[] pair = strings(form);
                forms.add(pair);
                patterns.computeIfAbsent(pair[1], Pattern::compile);
            }
            positionForms.put(e.getKey(), forms);
        }
        detectAvroJson = c.get("detect_avro_json").asBoolean();
        for (Map.Entry<String, JsonNode> e : c.get("avro_branches").properties()) {
            avroBranches.put(e.getKey(), e.getValue().asText());
        }
        fields = strings(c.get("fields"));
        imageDigests = c.path("image_digests").asBoolean(false);
        JsonNode out = c.get("source_out");
        String[] outNames = out == null || out.isNull() ? sourceFields : strings(out);
        sourceOut = new int[outNames.length];
        for (int i = 0; i < outNames.length; i++) {
            sourceOut[i] = sourceIndex(outNames[i]);
            if (sourceOut[i] < 0) {
                throw new IllegalArgumentException("cdc-monitor decoder: source_out names " + outNames[i]
                        + ", not a source field");
            }
        }
        slots = new int[Decoded.COLUMNS.length];
        java.util.Arrays.fill(slots, -1);
        for (int i = 0; i < fields.length; i++) {
            int k = Envelope.indexOf(Decoded.COLUMNS, fields[i]);
            if (k < 0) {
                throw new IllegalArgumentException("cdc-monitor decoder: no column " + fields[i]
                        + " (this jar decodes " + String.join(", ", Decoded.COLUMNS)
                        + "): rebuild the jar with scripts/build_jar.sh");
            }
            slots[k] = i;
        }
    }

    static DecoderConfig of(String text) {
        DecoderConfig c = last;
        if (c == null || !c.text.equals(text)) {
            c = new DecoderConfig(text);
            last = c;
        }
        return c;
    }

    /** A pattern of the configuration, compiled once. */
    Pattern pattern(String regex) {
        return patterns.get(regex);
    }

    int sourceIndex(String name) {
        Integer i = sourceIndex.get(name);
        return i == null ? -1 : i;
    }

    private static String[] strings(JsonNode array) {
        String[] out = new String[array.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = array.get(i).asText();
        }
        return out;
    }
}
