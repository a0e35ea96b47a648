package cdcmonitor;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;

/**
 * What a record's source block says, per connector: which connector wrote it, its server and
 * table, its times, and its position in the connector's log as comparable numbers
 * (decoding/events.py: the position column; each connector below).
 */
final class Connectors {
    private static final Pattern SCHEMA_CONNECTOR = Pattern.compile("io\\.debezium\\.connector\\.(\\w+)\\.Source");
    private static final Pattern ENVELOPE_NAME = Pattern.compile("\"name\"\\s*:\\s*\"[^\".]+\\.([^\"]+)\\.Envelope\"");
    private static final Pattern TOPIC_REST = Pattern.compile("^[^.]+\\.(.+)$");
    private static final Pattern TOPIC_FIRST = Pattern.compile("^([^.]+)");
    private static final Pattern FILE_INDEX = Pattern.compile("(\\d+)$");
    private static final Pattern HEX = Pattern.compile("^[0-9a-fA-F]{1,16}$");
    static final long TS_MIN_MS = 946_684_800_000L;  // 2000-01-01
    static final long TS_MAX_MS = 4_102_444_800_000L;  // 2100-01-01

    private final DecoderConfig cfg;
    private final Envelope e;
    private final String valueSchema;

    Connectors(DecoderConfig cfg, Envelope e, String valueSchema) {
        this.cfg = cfg;
        this.e = e;
        this.valueSchema = valueSchema;
    }

    String src(String name) {
        return e.source(cfg, name);
    }

    /** Spark's regexp_extract: the group's text, "" when nothing matches, null on null text. */
    static String extract(Pattern p, String text, int group) {
        if (text == null) {
            return null;
        }
        Matcher m = p.matcher(text);
        if (!m.find()) {
            return "";
        }
        String g = m.group(group);
        return g == null ? "" : g;
    }

    static String nullIfEmpty(String s) {
        return s == null || s.isEmpty() ? null : s;
    }

    private static String lower(String s) {
        return s == null ? null : s.toLowerCase(Locale.ROOT);
    }

    /** The connector whose rules apply (decoding/events.py's _flavour). */
    String flavour() {
        String connector = lower(src("connector"));
        String named = connector == null ? null : cfg.connectors.get(connector);
        if (named != null) {
            return named;
        }
        if (connector != null && !connector.replace(" ", "").isEmpty()) {
            return cfg.unknownFlavour;
        }
        if (connector == null && src("ts_sec") != null && src("ts_ms") == null) {
            return "dtle";
        }
        String byName = lower(extract(SCHEMA_CONNECTOR, valueSchema, 1));
        String fromSchema = byName == null ? null : cfg.connectors.get(byName);
        if (fromSchema != null) {
            return fromSchema;
        }
        if (src("scn") != null) {
            return "oracle";
        }
        if (src("commit_lsn") != null) {
            return "sqlserver";
        }
        if (src("file") != null && src("pos") != null) {
            return "mysql";
        }
        String lsn = src("lsn");
        if (lsn != null) {
            return lsn.contains(":") ? "yugabyte" : "postgresql";
        }
        return src("ord") != null ? "mongodb" : null;
    }

    String heartbeatServer(String topic, String keyServerName) {
        String byTopic = nullIfEmpty(extract(cfg.heartbeatServer, topic, 1));
        return byTopic != null ? byTopic : keyServerName;
    }

    String server(String kind, String topic, String heartbeatServer) {
        for (String s : new String[] {src("name"), src("server"), heartbeatServer}) {
            if (s != null) {
                return s;
            }
        }
        if (kind.equals("transaction")) {
            String s = nullIfEmpty(extract(cfg.transactionServer, topic, 1));
            if (s != null) {
                return s;
            }
        }
        return extract(TOPIC_FIRST, topic, 1);
    }

    String tableName() {
        String t = src("table");
        return t != null ? t : src("collection");
    }

    /** Spark's concat_ws("."): the non-null parts joined. */
    private static String dotted(String... parts) {
        StringBuilder b = new StringBuilder();
        boolean any = false;
        for (String p : parts) {
            if (p != null) {
                if (any) {
                    b.append('.');
                }
                b.append(p);
                any = true;
            }
        }
        return b.toString();
    }

    /** The qualified data collection, as Debezium spells it in transaction END markers. */
    String table(String flavour, String topic) {
        String tbl = tableName();
        if (tbl != null) {
            String db = src("db");
            String schema = src("schema");
            if (flavour == null) {
                return dotted(db, schema, tbl);
            }
            return switch (flavour) {
                case "postgresql", "yugabyte" -> dotted(schema, tbl);
                case "mysql", "dtle", "mongodb" -> dotted(db, tbl);
                case "vitess" -> dotted(nullIfEmpty(src("keyspace")) != null ? src("keyspace") : db, tbl);
                case "spanner" -> tbl;
                case "cassandra" -> dotted(src("keyspace"), tbl);
                default -> dotted(db, schema, tbl);
            };
        }
        String envelope = nullIfEmpty(extract(ENVELOPE_NAME, valueSchema, 1));
        if (envelope != null) {
            return envelope;
        }
        String rest = nullIfEmpty(extract(TOPIC_REST, topic, 1));
        return rest != null ? rest : topic;
    }

    Long microMs() {
        Long micro = JsonText.toLong(src("ts_micro"));
        return micro == null ? null : micro / 1000;
    }

    Long sourceTsMs(Long microMs) {
        Long ms = JsonText.toLong(src("ts_ms"));
        if (ms != null) {
            return ms;
        }
        Long sec = JsonText.toLong(src("ts_sec"));
        if (sec != null) {
            try {
                return Math.multiplyExact(sec, 1000L);
            } catch (ArithmeticException overflow) {
                // try_multiply: null
            }
        }
        return microMs;
    }

    String sourceTsRaw(Long microMs) {
        String ms = src("ts_ms");
        if (ms != null) {
            return ms;
        }
        String sec = src("ts_sec");
        if (sec != null) {
            return sec;
        }
        return microMs == null ? null : microMs.toString();
    }

    Long tsUs() {
        Long us = JsonText.toLong(e.tsUs);
        if (us != null) {
            return us;
        }
        Long ns = JsonText.toLong(e.tsNs);
        return ns == null ? null : ns / 1000;
    }

    Long sourceTsUs() {
        Long us = JsonText.toLong(src("ts_us"));
        if (us != null) {
            return us;
        }
        Long ns = JsonText.toLong(src("ts_ns"));
        if (ns != null) {
            return ns / 1000;
        }
        return JsonText.toLong(src("ts_micro"));
    }

    boolean snapshot() {
        String s = src("snapshot");
        return cfg.snapshotValues.contains(s == null ? "false" : lower(s));
    }

    String snapshotMarker() {
        return lower(src("snapshot"));
    }

    // -- positions ------------------------------------------------------------------------------
    private static List<Long> whole(Long... parts) {
        for (Long p : parts) {
            if (p == null) {
                return null;
            }
        }
        return Arrays.asList(parts);
    }

    /** Spark's split_part(lsn, ':', i) for i = 1..3, each hex part as a number (null beyond 2^63). */
    private static Long[] hexParts(String lsn) {
        Long[] out = new Long[3];
        if (lsn == null) {
            return out;
        }
        String[] parts = lsn.split(":", -1);
        for (int i = 0; i < 3; i++) {
            String p = i < parts.length ? parts[i] : "";
            if (HEX.matcher(p).find()) {
                long v = Long.parseUnsignedLong(p, 16);
                out[i] = v < 0 ? null : v;
            }
        }
        return out;
    }

    private static Long[] concat(Long[] a, Long... b) {
        Long[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    /** The record's position as comparable numbers (arrays compare element by element), or null. */
    List<Long> position(String flavour) {
        if (flavour == null) {
            return null;
        }
        return switch (flavour) {
            case "mysql", "dtle" -> whole(JsonText.unsigned(extract(FILE_INDEX, src("file"), 1)),
                    JsonText.unsigned(src("pos")), JsonText.unsigned(src("row") == null ? "0" : src("row")));
            case "postgresql" -> whole(JsonText.unsigned(src("lsn")));
            case "sqlserver" -> sqlserver();
            case "oracle" -> whole(JsonText.unsigned(src("commit_scn") != null ? src("commit_scn") : src("scn")),
                    JsonText.unsigned(src("scn")));
            case "yugabyte" -> yugabyte(src("lsn"));
            case "mongodb" -> mongodb();
            case "db2" -> whole(concat(hexParts(src("commit_lsn")), hexParts(src("change_lsn"))));
            case "informix" -> whole(JsonText.unsigned(src("commit_lsn")), JsonText.unsigned(src("change_lsn")));
            default -> null;
        };
    }

    private List<Long> sqlserver() {
        String commit = src("commit_lsn");
        String change = src("change_lsn");
        if (commit != null && change != null) {
            String serial = src("event_serial_no");
            return whole(concat(concat(hexParts(commit), hexParts(change)), JsonText.unsigned(serial == null ? "0" : serial)));
        }
        if (commit != null) {  // snapshot events carry only commit_lsn
            return whole(concat(hexParts(commit), 0L, 0L, 0L, 0L));
        }
        return null;
    }

    private static List<Long> yugabyte(String lsn) {
        if (lsn == null) {
            return null;
        }
        String[] parts = lsn.split(":", -1);
        Long[] out = new Long[parts.length];
        for (int i = 0; i < parts.length; i++) {
            out[i] = parts[i].isEmpty() ? Long.valueOf(0L) : JsonText.unsigned(parts[i]);
        }
        return whole(out);
    }

    private List<Long> mongodb() {
        Long ts = JsonText.unsigned(src("ts_ms"));
        if (ts == null) {
            Long sec = JsonText.unsigned(src("ts_sec"));
            if (sec != null) {
                try {
                    ts = Math.multiplyExact(sec, 1000L);
                } catch (ArithmeticException overflow) {
                    ts = null;
                }
            }
        }
        if (ts == null || ts < TS_MIN_MS || ts > TS_MAX_MS - 1) {
            return null;
        }
        return whole(ts, JsonText.unsigned(src("ord")));
    }

    // -- schema changes -------------------------------------------------------------------------
    /** The tables a schema change is about: its tableChanges' ids without quotes, else the table its DDL names. */
    List<String> ddlTables() {
        List<String> ids = tableChangeIds(e.tableChanges);
        if (ids != null && !ids.isEmpty()) {
            return ids;
        }
        List<String> out = new ArrayList<>(1);
        if (e.ddl == null) {
            return out;
        }
        Matcher m = cfg.ddlTable.matcher(e.ddl);
        String first = "";
        String second = "";
        if (m.find()) {
            first = m.group(1) == null ? "" : m.group(1);
            second = m.group(2) == null ? "" : m.group(2);
        }
        if (!second.isEmpty()) {
            out.add(first + "." + second);
        } else if (!first.isEmpty()) {
            out.add(e.databaseName == null ? first : e.databaseName + "." + first);
        }
        return out;
    }

    /** from_json(text, array<struct<type,id>>)'s ids: null when the text is not such an array (one object is one element). */
    private static List<String> tableChangeIds(String text) {
        if (text == null) {
            return null;
        }
        try (JsonParser p = JsonText.FACTORY.createParser(text)) {
            JsonToken t = p.nextToken();
            List<String> ids = new ArrayList<>();
            if (t == JsonToken.START_OBJECT) {
                ids.add(id(p));
            } else if (t == JsonToken.START_ARRAY) {
                while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
                    if (t == JsonToken.VALUE_NULL) {
                        ids.add(null);
                    } else if (t == JsonToken.START_OBJECT) {
                        ids.add(id(p));
                    } else {
                        return null;
                    }
                }
            } else {
                return null;
            }
            return ids;
        } catch (java.io.IOException | RuntimeException ex) {
            return null;
        }
    }

    private static String id(JsonParser p) throws java.io.IOException {
        String id = null;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            p.nextToken();
            if (name.equals("id")) {
                id = JsonText.text(p);
            } else {
                p.skipChildren();
            }
        }
        return id == null ? null : id.replace("\"", "");
    }
}
