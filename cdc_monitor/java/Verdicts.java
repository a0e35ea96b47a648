package cdcmonitor;

import java.io.IOException;
import java.io.StringWriter;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;

/**
 * What one record alone shows: the per-record rules, judged once while the record is decoded.
 * Each rule is declared (name, check, severity, meaning) in the Python check module named beside
 * it; its code here is that name ({@link #CODES}; tests/unit/test_decoder_rules.py holds both sides
 * equal). The connector facts they read come from the configuration (vocabulary.py's data).
 */
final class Verdicts {
    // checks/decode.py, checks/registry_schemas.py
    static final String INVALID_JSON = "invalid_json";
    static final String INVALID_ENVELOPE = "invalid_envelope";
    static final String UNDECODABLE_AVRO = "undecodable_avro";
    static final String UNKNOWN_SCHEMA_ID = "unknown_schema_id";
    // checks/lag.py
    static final String INVALID_SOURCE_TS = "invalid_source_ts";
    static final String NEGATIVE_LAG = "negative_lag";
    static final String INVALID_EVENT_TS = "invalid_event_ts";
    // checks/schema.py
    static final String OP_MISSING = "op_missing";
    static final String INVALID_OP = "invalid_op";
    static final String BEFORE_AFTER_MISMATCH = "before_after_mismatch";
    static final String MISSING_SOURCE_FIELD = "missing_source_field";
    static final String KEY_PAYLOAD_MISMATCH = "key_payload_mismatch";
    // checks/snapshots.py, checks/transactions.py, checks/source_block.py
    static final String SNAPSHOT_OP_MISMATCH = "snapshot_op_mismatch";
    static final String INVALID_MARKER_ID = "invalid_marker_id";
    static final String INVALID_POSITION = "invalid_position";
    // checks/schema.py: a key or value against its embedded schema
    static final String NON_OPTIONAL_NULL = "non_optional_null";
    static final String TYPE_MISMATCH = "type_mismatch";
    static final String INVALID_AVRO_NAME = "invalid_avro_name";
    static final String KEY_SCHEMA_NAME_MISMATCH = "key_schema_name_mismatch";
    static final String[] CODES = {
        INVALID_JSON, INVALID_ENVELOPE, UNDECODABLE_AVRO, UNKNOWN_SCHEMA_ID, INVALID_SOURCE_TS, NEGATIVE_LAG,
        INVALID_EVENT_TS, OP_MISSING, INVALID_OP, BEFORE_AFTER_MISMATCH, MISSING_SOURCE_FIELD, KEY_PAYLOAD_MISMATCH,
        SNAPSHOT_OP_MISMATCH, INVALID_MARKER_ID, INVALID_POSITION, NON_OPTIONAL_NULL, TYPE_MISMATCH,
        INVALID_AVRO_NAME, KEY_SCHEMA_NAME_MISMATCH,
    };
    private static final Pattern INTEGER = Pattern.compile("^-?\\d+$");
    private static final long MIN = Connectors.TS_MIN_MS;
    private static final long MAX = Connectors.TS_MAX_MS;

    private final DecoderConfig cfg;
    private final Decoded d;
    private final Envelope e;
    private List<Row> out;

    private Verdicts(DecoderConfig cfg, Decoded d) {
        this.cfg = cfg;
        this.d = d;
        this.e = d.e;
    }

    /** The record's broken rules as (rule, message) rows; null when it breaks none. */
    static List<Row> judge(DecoderConfig cfg, Decoded d) {
        Verdicts v = new Verdicts(cfg, d);
        v.decode();
        v.lag();
        if (d.envelope()) {
            v.envelope();
        }
        v.snapshot();
        v.marker();
        if (d.dataEvent()) {
            v.embedded("value", d.valueSchema, d.valueSchemaHash, false);
            v.embedded("key", d.keySchema, d.keySchemaHash, true);
        }
        return v.out;
    }

    private void add(String rule, String message) {
        if (out == null) {
            out = new ArrayList<>(2);
        }
        out.add(RowFactory.create(rule, message));
    }

    private void decode() {
        if (d.error == null) {
            return;
        }
        String snippet = d.snippet();
        if (d.error.equals(cfg.jsonError) || d.error.equals(cfg.envelopeError)) {
            boolean json = d.error.equals(cfg.jsonError);
            add(json ? INVALID_JSON : INVALID_ENVELOPE, d.detail + " is not "
                    + (json ? "valid JSON" : "a Connect/Debezium object") + ": " + snippet);
        } else if (d.error.equals(cfg.avroError) || d.error.equals(cfg.schemaIdError)) {
            add(d.error.equals(cfg.avroError) ? UNDECODABLE_AVRO : UNKNOWN_SCHEMA_ID, d.detail + ": " + snippet);
        }
    }

    // -- lag (checks/lag.py) --------------------------------------------------------------------
    static boolean validMs(Long ts, String raw) {
        return ts != null && ts >= MIN && ts < MAX && raw != null && INTEGER.matcher(raw).find();
    }

    private static boolean validUs(Long us) {
        return us != null && us >= MIN * 1000 && us < MAX * 1000;
    }

    /** What unit an out-of-range time is plainly in: the 2000..2100 span in seconds, micro- or nanoseconds. */
    static String unitHint(String raw) {
        if (raw == null) {
            return null;
        }
        BigDecimal n;
        try {
            n = new BigDecimal(raw.strip()).setScale(0, RoundingMode.HALF_UP);
        } catch (NumberFormatException | ArithmeticException ex) {
            return null;
        }
        if (n.precision() > 38) {
            return null;
        }
        Object[][] spans = {{"seconds", MIN / 1000, MAX / 1000}, {"microseconds", MIN * 1000, MAX * 1000},
            {"nanoseconds", BigDecimal.valueOf(MIN).multiply(BigDecimal.valueOf(1_000_000)),
                BigDecimal.valueOf(MAX).multiply(BigDecimal.valueOf(1_000_000))}};
        for (Object[] s : spans) {
            BigDecimal lo = s[1] instanceof BigDecimal b ? b : BigDecimal.valueOf((Long) s[1]);
            BigDecimal hi = s[2] instanceof BigDecimal b ? b : BigDecimal.valueOf((Long) s[2]);
            if (n.compareTo(lo) >= 0 && n.compareTo(hi) < 0) {
                return (String) s[0];
            }
        }
        return null;
    }

    /** Microseconds as milliseconds, for messages: 120, 0.35, -0.004. */
    static String msText(long us) {
        if (us % 1000 == 0) {
            return Long.toString(us / 1000);
        }
        return String.format(Locale.US, "%.3f", us / 1000.0).replaceAll("\\.?0+$", "");
    }

    /** A change event's source time, and a snapshot record's that has one (op r, or any op a source.snapshot
     * flag marks: a snapshot's times are times too, though left out of lag); not a foreign producer's. A
     * Debezium change event without a time is judged too: its missing field is also missing_source_field's. */
    private void lag() {
        boolean change = d.changeEvent();
        boolean debezium = !d.foreignProducer();
        boolean valid = validMs(d.sourceTsMs, d.sourceTsRaw);
        boolean timedSnapshot = d.snapshotEvent() && d.sourceTsRaw != null;
        if ((change || timedSnapshot) && debezium && !valid) {
            String hint = unitHint(d.sourceTsRaw);
            add(INVALID_SOURCE_TS, "source timestamp " + (d.sourceTsRaw == null ? "missing" : d.sourceTsRaw)
                    + " is not an integer ms time between 2000 and 2100"
                    + (hint == null ? "" : ": it looks like " + hint + ", not milliseconds"));
        }
        if (!change) {
            return;
        }
        boolean validEvent = validMs(d.tsMs, e.tsMs);
        if (valid && validEvent && debezium) {
            long lag = validUs(d.tsUs) && validUs(d.sourceTsUs) ? d.tsUs - d.sourceTsUs : (d.tsMs - d.sourceTsMs) * 1000;
            if (lag < 0) {
                add(NEGATIVE_LAG, "lag " + msText(lag) + " ms: ts_ms before source.ts_ms (clock skew?)");
            }
        }
        if (e.tsMs != null && !validEvent) {
            String hint = unitHint(e.tsMs);
            add(INVALID_EVENT_TS, "ts_ms " + e.tsMs + " is not an integer ms time between 2000 and 2100"
                    + (hint == null ? "" : ": it looks like " + hint + ", not milliseconds") + "; left out of lag");
        }
    }

    // -- envelope (checks/schema.py, checks/source_block.py) -------------------------------------
    private void envelope() {
        String op = e.op;
        if (op == null) {
            add(OP_MISSING, "change event without op");
        }
        String opProblem = op == null ? null : opProblem(op);
        if (opProblem != null) {
            add(INVALID_OP, "op " + jsonArray(op) + opProblem);
        }
        String ba = op == null || opProblem != null ? null : beforeAfter(op);
        if (ba != null) {
            add(BEFORE_AFTER_MISMATCH, ba);
        }
        boolean debezium = !d.foreignProducer();  // (its source fields and positions not judged)
        String missing = debezium ? missingSource() : "";
        if (!missing.isEmpty()) {
            add(MISSING_SOURCE_FIELD, "source lacks " + missing + " (" + (d.flavour == null ? "unknown connector" : d.flavour) + ")");
        }
        if (d.keyPayload != null && op != null && (op.equals("c") || op.equals("u") || op.equals("d") || op.equals("r"))) {
            String diff = keyDiff(op);
            if (diff != null && !diff.isEmpty()) {
                add(KEY_PAYLOAD_MISMATCH, "key differs from the row in " + diff);
            }
        }
        String bad = debezium ? badPositions() : "";
        if (!bad.isEmpty()) {
            add(INVALID_POSITION, "source position field(s) of the wrong form: " + bad + " (" + d.flavour + ")");
        }
    }

    private List<String> allowedOps() {
        List<String> allowed = d.flavour == null ? null : cfg.allowedOps.get(d.flavour);
        return allowed == null ? cfg.genericOps : allowed;
    }

    private String opProblem(String op) {
        if (op.equals("m")) {
            // with no connector named, a message op is not judged (Spark's null logic in the rule it replaces)
            boolean messageOk = (d.flavour == null || cfg.messageOpFlavours.contains(d.flavour)) && e.message != null
                    && e.before == null && e.after == null;
            return messageOk ? null : " is a logical-decoding message op on a row change";
        }
        List<String> allowed = allowedOps();
        if (!allowed.contains(op)) {
            return " is not one of " + String.join(",", allowed) + " (" + (d.flavour == null ? cfg.unknownFlavour : d.flavour) + ")";
        }
        return null;
    }

    private String beforeAfter(String op) {
        boolean before = e.before != null;
        boolean after = e.after != null;
        String f = d.flavour;
        boolean updateDescribed = e.patch != null || e.updateDescription != null;
        return switch (op) {
            case "c" -> before ? "op c with before set" : !after ? "op c without after" : null;
            case "u" -> !after && !(f == null ? updateDescribed : f.equals("mongodb") && updateDescribed) ? "op u without after" : null;
            case "d" -> after && f != null && !cfg.deleteKeepsAfter.contains(f) ? "op d with after set"
                    : !before && !after && f != null && !cfg.deleteWithoutImages.contains(f)
                    ? "op d without before or after (nothing says which row was deleted)" : null;
            case "r" -> !after ? "op r without after" : null;
            case "t" -> before || after ? "op t with a row image" : null;
            default -> null;
        };
    }

    private String missingSource() {
        List<String> required = d.flavour == null ? null : cfg.requiredSource.get(d.flavour);
        if (e.source == null || required == null) {
            return "";
        }
        List<String> missing = new ArrayList<>();
        for (String f : required) {
            if (e.source(cfg, f) == null) {
                missing.add(f);
            }
        }
        return String.join(", ", missing);
    }

    private String badPositions() {
        List<String[]> forms = d.flavour == null ? null : cfg.positionForms.get(d.flavour);
        if (forms == null) {
            return "";
        }
        List<String> bad = new ArrayList<>();
        for (String[] form : forms) {
            String v = e.source(cfg, form[0]);
            if (v != null && !cfg.pattern(form[1]).matcher(v).find()) {
                bad.add(form[0] + "=" + v);
            }
        }
        return String.join(", ", bad);
    }

    private static String jsonArray(String op) {
        StringWriter w = new StringWriter();
        try (JsonGenerator g = JsonText.FACTORY.createGenerator(w)) {
            g.writeStartArray();
            g.writeString(op);
            g.writeEndArray();
        } catch (IOException ex) {
            return "[\"" + op + "\"]";
        }
        return w.toString();
    }

    /** The key fields whose value differs from the row's (the key's fields in sorted order), joined; null when either is not an object. */
    private String keyDiff(String op) {
        Map<String, String> key = fields(d.keyPayload, true);
        String rowText = op.equals("d") ? e.before : e.after != null ? e.after : e.before;
        Map<String, String> row = fields(rowText, false);
        if (key == null || row == null) {
            return null;
        }
        boolean mongo = "mongodb".equals(d.flavour);
        List<String> differ = new ArrayList<>();
        for (Map.Entry<String, String> k : key.entrySet()) {
            String value = row.get(mongo && k.getKey().equals("id") ? "_id" : k.getKey());
            String expected = k.getValue();
            if (mongo) {
                value = MongoIds.id(value);
                expected = MongoIds.keyId(expected);
            }
            if (value != null && expected != null && !value.equals(expected)) {
                differ.add(k.getKey());
            }
        }
        return String.join(", ", differ);
    }

    /** A JSON object's fields as text, a wrapped value ({"value": ...}) unwrapped; null when not an object. */
    private static Map<String, String> fields(String text, boolean sorted) {
        if (text == null) {
            return null;
        }
        Map<String, String> out = sorted ? new TreeMap<>() : new java.util.HashMap<>();
        try (JsonParser p = JsonText.FACTORY.createParser(text)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return null;
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                p.nextToken();
                String v = JsonText.text(p);
                out.put(name, v != null && v.startsWith("{") ? unwrap(v) : v);
            }
            return out;
        } catch (IOException | RuntimeException ex) {
            return null;
        }
    }

    private static String unwrap(String v) {
        Map<String, String> inner = fields(v, false);
        String value = inner == null ? null : inner.get("value");
        return value != null ? value : v;
    }

    // -- embedded schemas (checks/schema.py) ------------------------------------------------------
    private void embedded(String label, String schemaText, Long hash, boolean key) {
        ConnectSchema schema = hash == null ? null : ConnectSchema.of(schemaText, hash, key, cfg.skipNullCheck);
        if (schema == null) {
            return;
        }
        com.fasterxml.jackson.databind.JsonNode payload = key ? d.keyPayloadTree() : d.payloadTree();
        if (payload == null || payload.isNull()) {
            return;
        }
        List<java.util.Set<String>> found = schema.judge(payload);
        if (!found.get(0).isEmpty()) {
            add(NON_OPTIONAL_NULL, label + ": non-optional field null or absent: " + String.join(", ", found.get(0)));
        }
        String ranges = String.join(", ", found.get(2));
        if (!found.get(1).isEmpty()) {
            add(TYPE_MISMATCH, label + ": value does not match its schema type at " + String.join(", ", found.get(1))
                    + (ranges.isEmpty() ? "" : "; integer out of its type's range at " + ranges));
        } else if (!ranges.isEmpty()) {
            add(TYPE_MISMATCH, label + ": integer out of its type's range at " + ranges);
        }
        if (!schema.invalidNames.isEmpty()) {
            add(INVALID_AVRO_NAME, label + " schema name(s) not valid Avro full names: " + schema.invalidNames);
        }
        if (key && !schema.namedAfter(d.topic)) {
            add(KEY_SCHEMA_NAME_MISMATCH, "key schema name does not match the topic: " + schema.name);
        }
    }

    // -- snapshots, markers (checks/snapshots.py, checks/transactions.py) -------------------------
    private void snapshot() {
        String f = d.flavour;
        if (!d.dataEvent() || f == null || f.equals(cfg.unknownFlavour) || cfg.snapshotOpsUndocumented.contains(f)) {
            return;
        }
        String op = e.op;
        String marker = d.snapshotMarker;
        boolean flagged = marker != null && !marker.equals("false");
        boolean change = "c".equals(op) || "u".equals(op) || "d".equals(op);
        if ((change && flagged) || ("r".equals(op) && "false".equals(marker))) {
            add(SNAPSHOT_OP_MISMATCH, "op " + op + " with source.snapshot " + (marker == null ? "null" : marker)
                    + (op.equals("r") ? ": a snapshot read marked as streamed" : ": a streamed change marked as a snapshot"));
        }
    }

    private void marker() {
        if (!d.kind.equals("transaction") || d.error != null || !("BEGIN".equals(d.status) || "END".equals(d.status))) {
            return;
        }
        String id = d.markerId;
        if (id == null || id.chars().allMatch(ch -> ch == ' ')) {  // Spark's trim: spaces only
            add(INVALID_MARKER_ID, d.status + " marker with " + (id == null ? "a null id" : "an empty id")
                    + ": it names no transaction");
        }
    }
}
