package cdcmonitor;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

import scala.jdk.javaapi.CollectionConverters;

/**
 * watch's state as compact bytes: a Row of a known schema (strings, ints, longs, booleans, bytes,
 * arrays and structs of those) written with variable-length integers. The schema is not written:
 * reader and writer share it ({@link Carry}'s state schemas, under {@link Carry#VERSION}).
 *
 * <ul>
 *   <li>Per struct a presence bitmap (one byte 0 instead when it is the previous element's of its
 *       array: a key's records have the same fields) and a bitmap of its booleans' values.</li>
 *   <li>Each number (a long, or a text that is a canonical integer, or the integer a text ends with)
 *       as the difference from the same field of the previous element of its array (a key's
 *       records: offsets, times and positions a little apart, a value-schema hash unchanged), else
 *       from the struct's previous number (an event time beside its record time).</li>
 *   <li>A text ending in a canonical integer after a non-digit ({@code uuid:1234}, a MySQL GTID) as
 *       its prefix and that integer; a text that is part of the group's key ({@code context}: its
 *       topic names its server and table) as where it is there; a text of {@link #COMMON} (kinds, ops,
 *       markers: a compression dictionary, not a vocabulary: any text can be written) as its index;
 *       any other text once per value (a table of the distinct texts, referenced by index).</li>
 * </ul>
 */
final class Codec {
    private Codec() {
    }

    /** Texts written as one byte: what most records hold (changing it changes the format: bump {@link Carry#VERSION}). */
    static final String[] COMMON = {
        "", "data", "tombstone", "transaction", "schema_change", "heartbeat", "c", "u", "d", "r", "t", "m",
        "true", "false", "last", "first", "incremental", "last_in_data_collection", "first_in_data_collection",
        "BEGIN", "END", "marker", "mysql", "postgresql", "sqlserver", "oracle", "mongodb", "db2", "informix",
    };
    private static final Map<String, Integer> COMMON_AT = new HashMap<>();

    static {
        for (int i = 0; i < COMMON.length; i++) {
            COMMON_AT.put(COMMON[i], i);
        }
    }

    // a text's tag: a canonical integer, a prefix and an integer, a part of the context, else COMMON's
    // index + FIXED, else the text table's index + FIXED + COMMON.length
    private static final int NUMBER = 0, SUFFIXED = 1, IN_CONTEXT = 2, FIXED = 3;
    private static final int MIN_CONTEXT = 3;  // shorter texts are not looked for in the context

    static byte[] encode(Row row, StructType schema) {
        return encode(row, schema, "");
    }

    static Row decode(byte[] bytes, StructType schema) {
        return decode(bytes, schema, "");
    }

    /** {@code row} as bytes; {@code context}: a text reader and writer share (the group's key). */
    static byte[] encode(Row row, StructType schema, String context) {
        Writer w = new Writer(context);
        w.struct(row, schema, new Ctx());
        ByteArrayOutputStream out = new ByteArrayOutputStream(w.body.size() + 16 * w.texts.size() + 4);
        varint(out, w.texts.size());
        for (String s : w.texts) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            varint(out, b.length);
            out.write(b, 0, b.length);
        }
        byte[] body = w.body.toByteArray();
        out.write(body, 0, body.length);
        return out.toByteArray();
    }

    static Row decode(byte[] bytes, StructType schema, String context) {
        Reader r = new Reader(bytes, context);
        int n = (int) r.varint();
        for (int i = 0; i < n; i++) {
            int len = (int) r.varint();
            r.texts.add(new String(bytes, r.at, len, StandardCharsets.UTF_8));
            r.at += len;
        }
        return r.struct(schema, new Ctx());
    }

    static void varint(ByteArrayOutputStream out, long v) {
        while ((v & ~0x7FL) != 0) {
            out.write((int) ((v & 0x7F) | 0x80));
            v >>>= 7;
        }
        out.write((int) v);
    }

    static long zigzag(long v) {
        return (v << 1) ^ (v >> 63);
    }

    static long unzigzag(long v) {
        return (v >>> 1) ^ -(v & 1);
    }

    /** A text that is exactly how Java writes some long (no sign, zeros or spaces it would not write). */
    static Long canonical(String s) {
        int n = s.length();
        if (n == 0 || n > 20) {
            return null;
        }
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (!(c >= '0' && c <= '9') && !(i == 0 && c == '-' && n > 1)) {
                return null;
            }
        }
        try {
            long v = Long.parseLong(s);
            return Long.toString(v).equals(s) ? v : null;
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** Where the canonical non-negative integer {@code s} ends with starts (after a non-digit), or -1. */
    static int suffix(String s) {
        int i = s.length();
        while (i > 0 && Character.isDigit(s.charAt(i - 1)) && s.charAt(i - 1) < 128) {
            i--;
        }
        if (i == 0 || i == s.length() || s.length() - i > 18 || (s.charAt(i) == '0' && i < s.length() - 1)) {
            return -1;
        }
        return i;
    }

    /**
     * What the previous element of an array left for each field of its elements: the numbers it wrote
     * (per field, and per index of an array field) and its presence bitmap.
     */
    static final class Ctx {
        long last;
        boolean seen;
        byte[] presence;
        Ctx[] fields;
        List<Ctx> items;

        Ctx field(int i, int n) {
            if (fields == null) {
                fields = new Ctx[n];
            }
            if (fields[i] == null) {
                fields[i] = new Ctx();
            }
            return fields[i];
        }

        Ctx item(int i) {
            if (items == null) {
                items = new ArrayList<>();
            }
            while (items.size() <= i) {
                items.add(new Ctx());
            }
            return items.get(i);
        }
    }

    private static boolean isStruct(DataType t) {
        return t instanceof StructType;
    }

    private static int booleans(StructField[] fields) {
        int n = 0;
        for (StructField f : fields) {
            if (f.dataType() instanceof BooleanType) {
                n++;
            }
        }
        return n;
    }

    private static final class Writer {
        final ByteArrayOutputStream body = new ByteArrayOutputStream(64);
        final List<String> texts = new ArrayList<>();
        final Map<String, Integer> index = new HashMap<>();
        final String context;
        long prev;  // the current struct's (or array's) previous number

        Writer(String context) {
            this.context = context;
        }

        void struct(Row row, StructType schema, Ctx ctx) {
            StructField[] fields = schema.fields();
            byte[] present = new byte[(fields.length + 7) / 8];
            byte[] truth = new byte[(booleans(fields) + 7) / 8];
            int b = 0;
            for (int i = 0; i < fields.length; i++) {
                boolean bool = fields[i].dataType() instanceof BooleanType;
                if (!row.isNullAt(i)) {
                    present[i / 8] |= (byte) (1 << (i % 8));
                    if (bool && row.getBoolean(i)) {
                        truth[b / 8] |= (byte) (1 << (b % 8));
                    }
                }
                if (bool) {
                    b++;
                }
            }
            if (ctx.presence != null && java.util.Arrays.equals(ctx.presence, present)) {
                body.write(0);
            } else {
                body.write(1);
                body.write(present, 0, present.length);
                ctx.presence = present;
            }
            body.write(truth, 0, truth.length);
            long saved = prev;
            prev = 0;
            for (int i = 0; i < fields.length; i++) {
                if (!row.isNullAt(i) && !(fields[i].dataType() instanceof BooleanType)) {
                    value(row.get(i), fields[i].dataType(), ctx.field(i, fields.length));
                }
            }
            prev = saved;
        }

        void number(long n, Ctx ctx) {
            varint(body, zigzag(n - (ctx.seen ? ctx.last : prev)));
            prev = n;
            ctx.last = n;
            ctx.seen = true;
        }

        void text(String s, Ctx ctx) {
            Long n = canonical(s);
            if (n != null) {
                varint(body, NUMBER);
                number(n, ctx);
                return;
            }
            int at = suffix(s);
            if (at > 0) {
                varint(body, SUFFIXED);
                ref(s.substring(0, at));
                number(Long.parseLong(s.substring(at)), ctx);
                return;
            }
            ref(s);
        }

        /** A text as a reference: to the context, COMMON or the text table. */
        void ref(String s) {
            Integer common = COMMON_AT.get(s);
            if (common != null) {
                varint(body, FIXED + common);
                return;
            }
            int in = s.length() >= MIN_CONTEXT ? context.indexOf(s) : -1;
            if (in >= 0) {
                varint(body, IN_CONTEXT);
                varint(body, in);
                varint(body, s.length());
                return;
            }
            Integer at = index.get(s);
            if (at == null) {
                at = texts.size();
                texts.add(s);
                index.put(s, at);
            }
            varint(body, FIXED + COMMON.length + (long) at);
        }

        void value(Object v, DataType t, Ctx ctx) {
            if (t instanceof StringType) {
                text((String) v, ctx);
            } else if (t instanceof LongType) {
                number((Long) v, ctx);
            } else if (t instanceof IntegerType) {
                varint(body, zigzag((Integer) v));
            } else if (t instanceof BinaryType) {
                byte[] b = (byte[]) v;
                varint(body, b.length);
                body.write(b, 0, b.length);
            } else if (t instanceof StructType) {
                struct((Row) v, (StructType) t, ctx);
            } else if (t instanceof ArrayType) {
                List<Object> items = v instanceof scala.collection.Seq
                        ? CollectionConverters.asJava((scala.collection.Seq<Object>) v) : (List<Object>) v;
                varint(body, items.size());
                byte[] present = new byte[(items.size() + 7) / 8];
                for (int i = 0; i < items.size(); i++) {
                    if (items.get(i) != null) {
                        present[i / 8] |= (byte) (1 << (i % 8));
                    }
                }
                body.write(present, 0, present.length);
                DataType e = ((ArrayType) t).elementType();
                // structs: each element against the previous one; other items against the same index of
                // the previous array in this place (a position), else the previous item (a list of ids)
                for (int i = 0; i < items.size(); i++) {
                    if (items.get(i) != null) {
                        value(items.get(i), e, isStruct(e) ? ctx.item(0) : ctx.item(i));
                    }
                }
            } else {
                throw new IllegalArgumentException("no codec for " + t);
            }
        }
    }

    private static final class Reader {
        final byte[] bytes;
        final String context;
        int at;
        final List<String> texts = new ArrayList<>();
        long prev;

        Reader(byte[] bytes, String context) {
            this.bytes = bytes;
            this.context = context;
        }

        long varint() {
            long v = 0;
            int shift = 0;
            while (true) {
                byte b = bytes[at++];
                v |= (long) (b & 0x7F) << shift;
                if ((b & 0x80) == 0) {
                    return v;
                }
                shift += 7;
            }
        }

        Row struct(StructType schema, Ctx ctx) {
            StructField[] fields = schema.fields();
            int m = (fields.length + 7) / 8;
            byte[] present;
            if (bytes[at++] == 0) {
                present = ctx.presence;
            } else {
                present = java.util.Arrays.copyOfRange(bytes, at, at + m);
                at += m;
                ctx.presence = present;
            }
            int truthAt = at;
            at += (booleans(fields) + 7) / 8;
            Object[] v = new Object[fields.length];
            long saved = prev;
            prev = 0;
            int b = 0;
            for (int i = 0; i < fields.length; i++) {
                DataType t = fields[i].dataType();
                boolean bool = t instanceof BooleanType;
                if ((present[i / 8] & (1 << (i % 8))) != 0) {
                    v[i] = bool ? (bytes[truthAt + b / 8] & (1 << (b % 8))) != 0 : value(t, ctx.field(i, fields.length));
                }
                if (bool) {
                    b++;
                }
            }
            prev = saved;
            return RowFactory.create(v);
        }

        long number(Ctx ctx) {
            long n = (ctx.seen ? ctx.last : prev) + unzigzag(varint());
            prev = n;
            ctx.last = n;
            ctx.seen = true;
            return n;
        }

        String ref(long tag) {
            if (tag == IN_CONTEXT) {
                int from = (int) varint();
                return context.substring(from, from + (int) varint());
            }
            if (tag < FIXED + COMMON.length) {
                return COMMON[(int) tag - FIXED];
            }
            return texts.get((int) (tag - FIXED - COMMON.length));
        }

        Object value(DataType t, Ctx ctx) {
            if (t instanceof StringType) {
                long tag = varint();
                if (tag == NUMBER) {
                    return Long.toString(number(ctx));
                }
                if (tag == SUFFIXED) {
                    String prefix = ref(varint());
                    return prefix + number(ctx);
                }
                return ref(tag);
            } else if (t instanceof LongType) {
                return number(ctx);
            } else if (t instanceof IntegerType) {
                return (int) unzigzag(varint());
            } else if (t instanceof BinaryType) {
                int len = (int) varint();
                byte[] b = java.util.Arrays.copyOfRange(bytes, at, at + len);
                at += len;
                return b;
            } else if (t instanceof StructType) {
                return struct((StructType) t, ctx);
            } else if (t instanceof ArrayType) {
                int n = (int) varint();
                int presentAt = at;
                at += (n + 7) / 8;
                DataType e = ((ArrayType) t).elementType();
                List<Object> items = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    boolean here = (bytes[presentAt + i / 8] & (1 << (i % 8))) != 0;
                    items.add(here ? value(e, isStruct(e) ? ctx.item(0) : ctx.item(i)) : null);
                }
                return CollectionConverters.asScala(items);
            }
            throw new IllegalArgumentException("no codec for " + t);
        }
    }
}
