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
 * arrays and structs of those) written with variable-length integers, a presence bitmap per struct
 * (booleans as a second bitmap), each long as the difference from the struct's previous long (record
 * times, event times and their texts sit close together), a text that is a canonical integer as that
 * integer, and every other text once per value (a table of the distinct texts, referenced by index:
 * a key's server, table, op and connector are written once for all its records). The schema is not
 * written: reader and writer share it ({@link Carry}'s state schemas, under {@link Carry#VERSION}).
 */
final class Codec {
    private Codec() {
    }

    static byte[] encode(Row row, StructType schema) {
        Writer w = new Writer();
        w.struct(row, schema);
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

    static Row decode(byte[] bytes, StructType schema) {
        Reader r = new Reader(bytes);
        int n = (int) r.varint();
        for (int i = 0; i < n; i++) {
            int len = (int) r.varint();
            r.texts.add(new String(bytes, r.at, len, StandardCharsets.UTF_8));
            r.at += len;
        }
        return r.struct(schema);
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

    private static final class Writer {
        final ByteArrayOutputStream body = new ByteArrayOutputStream(64);
        final List<String> texts = new ArrayList<>();
        final Map<String, Integer> index = new HashMap<>();
        long prev;  // the current struct's previous long

        void struct(Row row, StructType schema) {
            StructField[] fields = schema.fields();
            byte[] present = new byte[(fields.length + 7) / 8];
            byte[] truth = new byte[(fields.length + 7) / 8];
            for (int i = 0; i < fields.length; i++) {
                if (!row.isNullAt(i)) {
                    present[i / 8] |= (byte) (1 << (i % 8));
                    if (fields[i].dataType() instanceof BooleanType && row.getBoolean(i)) {
                        truth[i / 8] |= (byte) (1 << (i % 8));
                    }
                }
            }
            body.write(present, 0, present.length);
            body.write(truth, 0, truth.length);
            long saved = prev;
            prev = 0;
            for (int i = 0; i < fields.length; i++) {
                if (!row.isNullAt(i) && !(fields[i].dataType() instanceof BooleanType)) {
                    value(row.get(i), fields[i].dataType());
                }
            }
            prev = saved;
        }

        void value(Object v, DataType t) {
            if (t instanceof StringType) {
                String s = (String) v;
                Long n = canonical(s);
                if (n != null) {
                    varint(body, 0);
                    varint(body, zigzag(n - prev));
                    prev = n;
                    return;
                }
                Integer at = index.get(s);
                if (at == null) {
                    at = texts.size();
                    texts.add(s);
                    index.put(s, at);
                }
                varint(body, at + 1L);
            } else if (t instanceof LongType) {
                long n = (Long) v;
                varint(body, zigzag(n - prev));
                prev = n;
            } else if (t instanceof IntegerType) {
                varint(body, zigzag((Integer) v));
            } else if (t instanceof BinaryType) {
                byte[] b = (byte[]) v;
                varint(body, b.length);
                body.write(b, 0, b.length);
            } else if (t instanceof StructType) {
                struct((Row) v, (StructType) t);
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
                for (Object item : items) {
                    if (item != null) {
                        value(item, e);
                    }
                }
            } else {
                throw new IllegalArgumentException("no codec for " + t);
            }
        }
    }

    private static final class Reader {
        final byte[] bytes;
        int at;
        final List<String> texts = new ArrayList<>();
        long prev;

        Reader(byte[] bytes) {
            this.bytes = bytes;
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

        Row struct(StructType schema) {
            StructField[] fields = schema.fields();
            int m = (fields.length + 7) / 8;
            int presentAt = at;
            int truthAt = at + m;
            at += 2 * m;
            Object[] v = new Object[fields.length];
            long saved = prev;
            prev = 0;
            for (int i = 0; i < fields.length; i++) {
                if ((bytes[presentAt + i / 8] & (1 << (i % 8))) == 0) {
                    continue;
                }
                DataType t = fields[i].dataType();
                v[i] = t instanceof BooleanType ? (bytes[truthAt + i / 8] & (1 << (i % 8))) != 0 : value(t);
            }
            prev = saved;
            return RowFactory.create(v);
        }

        Object value(DataType t) {
            if (t instanceof StringType) {
                long tag = varint();
                if (tag == 0) {
                    long n = prev + unzigzag(varint());
                    prev = n;
                    return Long.toString(n);
                }
                return texts.get((int) tag - 1);
            } else if (t instanceof LongType) {
                long n = prev + unzigzag(varint());
                prev = n;
                return n;
            } else if (t instanceof IntegerType) {
                return (int) unzigzag(varint());
            } else if (t instanceof BinaryType) {
                int len = (int) varint();
                byte[] b = java.util.Arrays.copyOfRange(bytes, at, at + len);
                at += len;
                return b;
            } else if (t instanceof StructType) {
                return struct((StructType) t);
            } else if (t instanceof ArrayType) {
                int n = (int) varint();
                int presentAt = at;
                at += (n + 7) / 8;
                DataType e = ((ArrayType) t).elementType();
                List<Object> items = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    items.add((bytes[presentAt + i / 8] & (1 << (i % 8))) != 0 ? value(e) : null);
                }
                return CollectionConverters.asScala(items);
            }
            throw new IllegalArgumentException("no codec for " + t);
        }
    }
}
