import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;

import java.util.Arrays;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF2;

/**
 * A purpose-built decoder inside Spark, through the public Java UDF API (benchmarks/jvm_decode.py
 * --udf): (value text, key text) -> one struct, one streaming Jackson pass over each. It picks out
 * what cdc-monitor's decoder reads: the envelope's op and times, the transaction marker's fields,
 * the source block's scalar fields (the names in SOURCE, in that order: declared as data), the
 * transaction block, the row images and embedded schemas as hashes of their raw text (never
 * rebuilt), the key's payload hash and the one-document check. A prototype to measure what such a
 * decoder costs per record inside Spark; not the product's decoder.
 */
public final class DecodeUdf implements UDF2<String, String, Row> {
    private static final JsonFactory JSON = new JsonFactory();
    static final String[] SOURCE = {"connector", "name", "db", "schema", "table", "ts_ms", "ts_us", "ts_ns", "ts_sec",
        "snapshot", "file", "pos", "row", "gtid", "lsn", "commit_lsn", "change_lsn", "event_serial_no", "scn", "txId",
        "sequence", "ord", "h"};
    static final String[] TOP = {"op", "ts_ms", "ts_us", "ts_ns", "status", "id", "event_count"};
    static final String[] TXN = {"id", "total_order", "data_collection_order"};

    @Override
    public Row call(String value, String key) {
        Object[] out = new Object[TOP.length + SOURCE.length + TXN.length + 7];
        try {
            if (value != null) {
                document(value, out, true);
            }
            if (key != null) {
                document(key, out, false);
            }
        } catch (Exception e) {
            out[out.length - 1] = "invalid_json";
        }
        return RowFactory.create(out);
    }

    static int index(String[] names, String name) {
        for (int i = 0; i < names.length; i++) {
            if (names[i].equals(name)) {
                return i;
            }
        }
        return -1;
    }

    static void document(String text, Object[] out, boolean value) throws Exception {
        int base = TOP.length + SOURCE.length + TXN.length;
        try (JsonParser p = JSON.createParser(text)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                out[out.length - 1] = "invalid_envelope";
                return;
            }
            boolean wrapped = false;
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                p.nextToken();
                if (name.equals("schema")) {
                    out[base + (value ? 2 : 4)] = span(p, text);
                    wrapped = true;
                } else if (name.equals("payload") && p.currentToken() == JsonToken.START_OBJECT) {
                    if (value) {
                        payload(p, text, out);
                    } else {
                        out[base + 3] = span(p, text);
                    }
                } else if (value) {
                    field(p, text, out, name);
                } else {
                    p.skipChildren();
                }
            }
            if (p.nextToken() != null) {
                out[out.length - 1] = "invalid_json";  // more than one document
            }
            out[base + 5] = wrapped;
        }
    }

    static void payload(JsonParser p, String text, Object[] out) throws Exception {
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            p.nextToken();
            field(p, text, out, name);
        }
    }

    static void field(JsonParser p, String text, Object[] out, String name) throws Exception {
        int base = TOP.length + SOURCE.length + TXN.length;
        switch (name) {
            case "before" -> out[base] = p.currentToken() == JsonToken.VALUE_NULL ? null : span(p, text);
            case "after" -> out[base + 1] = p.currentToken() == JsonToken.VALUE_NULL ? null : span(p, text);
            case "source" -> fields(p, out, SOURCE, TOP.length);
            case "transaction" -> fields(p, out, TXN, TOP.length + SOURCE.length);
            default -> {
                int i = index(TOP, name);
                if (i >= 0 && p.currentToken().isScalarValue()) {
                    out[i] = p.getText();
                } else {
                    p.skipChildren();
                }
            }
        }
    }

    /** An object's declared scalar fields as text, nested values skipped. */
    static void fields(JsonParser p, Object[] out, String[] names, int offset) throws Exception {
        if (p.currentToken() != JsonToken.START_OBJECT) {
            p.skipChildren();
            return;
        }
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            int i = index(names, p.currentName());
            JsonToken t = p.nextToken();
            if (i >= 0 && t.isScalarValue() && t != JsonToken.VALUE_NULL) {
                out[offset + i] = p.getText();
            } else {
                p.skipChildren();
            }
        }
    }

    /** A nested value's raw text, hashed as the parser sees it. */
    static long span(JsonParser p, String text) throws Exception {
        int from = (int) p.currentTokenLocation().getCharOffset();
        p.skipChildren();
        int to = (int) p.currentLocation().getCharOffset();
        long h = 1125899906842597L;
        for (int i = from; i < Math.max(from, to); i++) {
            h = 31 * h + text.charAt(i);
        }
        return h;
    }

    /** The struct's DDL, in the order call() fills it. */
    public static String ddl() {
        StringBuilder b = new StringBuilder();
        for (String n : TOP) {
            b.append(n).append(" string,");
        }
        for (String n : SOURCE) {
            b.append("source_").append(n).append(" string,");
        }
        for (String n : TXN) {
            b.append("txn_").append(n).append(" string,");
        }
        b.append("before_hash bigint,after_hash bigint,value_schema_hash bigint,key_payload_hash bigint,key_schema_hash bigint,");
        b.append("wrapped boolean,error string");
        return b.toString();
    }

    public static void main(String[] args) {
        System.out.println(ddl());
        Row row = new DecodeUdf().call(args[0], args.length > 1 ? args[1] : null);
        Object[] values = new Object[row.length()];
        for (int i = 0; i < values.length; i++) {
            values[i] = row.get(i);
        }
        System.out.println(Arrays.toString(values));
    }
}
