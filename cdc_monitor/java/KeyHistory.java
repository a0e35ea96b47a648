package cdcmonitor;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.GroupState;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

import scala.jdk.javaapi.CollectionConverters;

/**
 * watch's per-key history on the JVM: one call per key group without a Python worker.
 *
 * <p>Input rows: {@code ctx} then the record ({@link #RECORD}) then {@code meta}. A group whose
 * {@code ctx} starts with {@code K} is one key of one topic: its records are emitted with role
 * {@code new}, the last {@code keep} records it held per partition with role {@code carried}, and it
 * keeps the last {@code keep} records per partition (by offset) for the next micro-batch. A held
 * record at or past a new record's offset in its partition is of an earlier log of that partition
 * (the offsets went back: the topic was deleted and created again): it is dropped, not carried. A key idle
 * for {@code ttlMs} of processing time times out: its history is dropped and one {@code evicted} row
 * (offset -1) is emitted per partition it held. A {@code P} group (records with no key history) is
 * emitted with role {@code new}; any other group passes through unchanged (role null) for the
 * operator after this one.
 */
public final class KeyHistory implements FlatMapGroupsWithStateFunction<String, Row, Row, Row> {
    private static final long serialVersionUID = 1L;

    /** A record as carried (the Kafka source's fields, timestamp in microseconds, headers as JSON). */
    public static final StructType RECORD = new StructType()
            .add("topic", DataTypes.StringType)
            .add("partition", DataTypes.IntegerType)
            .add("offset", DataTypes.LongType)
            .add("key", DataTypes.BinaryType)
            .add("value", DataTypes.BinaryType)
            .add("record_us", DataTypes.LongType)
            .add("timestampType", DataTypes.IntegerType)
            .add("headers_json", DataTypes.StringType);
    public static final StructType STATE = new StructType().add("h", DataTypes.createArrayType(RECORD));
    public static final StructType OUTPUT = prepend("ctx", RECORD).add("meta", DataTypes.StringType)
            .add("role", DataTypes.StringType);
    private static final int N = RECORD.size();

    private final int keep;
    private final long ttlMs;

    public KeyHistory(int keep, long ttlMs) {
        this.keep = keep;
        this.ttlMs = ttlMs;
    }

    private static StructType prepend(String name, StructType rest) {
        StructType out = new StructType().add(name, DataTypes.StringType);
        for (var f : rest.fields()) {
            out = out.add(f);
        }
        return out;
    }

    /** The operator over {@code input} (columns: ctx, the record's, meta), for Python's py4j. */
    public static Dataset<Row> apply(Dataset<Row> input, int keep, long ttlMs) {
        return input.groupByKey((MapFunction<Row, String>) r -> r.getString(0), Encoders.STRING())
                .flatMapGroupsWithState(new KeyHistory(keep, ttlMs), OutputMode.Append(), Encoders.row(STATE),
                        Encoders.row(OUTPUT), GroupStateTimeout.ProcessingTimeTimeout());
    }

    private static Row out(String ctx, Row rec, String role) {
        return out(ctx, rec, null, role);
    }

    private static Row out(String ctx, Row rec, String meta, String role) {
        Object[] v = new Object[N + 3];
        v[0] = ctx;
        for (int i = 0; i < N; i++) {
            v[i + 1] = rec.get(i);
        }
        v[N + 1] = meta;
        v[N + 2] = role;
        return RowFactory.create(v);
    }

    private static Row record(Row in) {
        Object[] v = new Object[N];
        for (int i = 0; i < N; i++) {
            v[i] = in.get(i + 1);
        }
        return RowFactory.create(v);
    }

    @Override
    public Iterator<Row> call(String ctx, Iterator<Row> rows, GroupState<Row> state) {
        List<Row> out = new ArrayList<>();
        if (!ctx.startsWith("K")) {
            String role = ctx.startsWith("P") ? "new" : null;
            while (rows.hasNext()) {
                Row r = rows.next();
                out.add(out(ctx, record(r), r.getString(N + 1), role));
            }
            return out.iterator();
        }
        List<Row> held = state.exists() ? state.get().getList(0) : List.of();
        if (state.hasTimedOut()) {
            state.remove();
            Map<String, Row> parts = new TreeMap<>();
            for (Row h : held) {
                Row ev = RowFactory.create(h.getString(0), h.getInt(1), -1L, null, null, 0L, 0, null);
                parts.putIfAbsent(h.getString(0) + "\u001f" + h.getInt(1), out(ctx, ev, "evicted"));
            }
            out.addAll(parts.values());
            return out.iterator();
        }
        List<Row> fresh = new ArrayList<>();
        Map<Integer, Long> firstNew = new HashMap<>();  // per partition, the lowest new offset
        while (rows.hasNext()) {
            Row rec = record(rows.next());
            fresh.add(rec);
            firstNew.merge(rec.getInt(1), rec.getLong(2), Math::min);
        }
        List<Row> merged = new ArrayList<>();
        for (Row h : held) {
            Long first = firstNew.get(h.getInt(1));
            if (first != null && h.getLong(2) >= first) {
                continue;  // the partition's offsets went back (its topic created again): an earlier log's record
            }
            merged.add(h);
            out.add(out(ctx, h, "carried"));
        }
        for (Row rec : fresh) {
            merged.add(rec);
            out.add(out(ctx, rec, "new"));
        }
        merged.sort(Comparator.comparingInt((Row r) -> r.getInt(1)).thenComparingLong(r -> r.getLong(2)));
        Map<Integer, Integer> left = new HashMap<>();  // per partition, how many more to keep
        List<Row> kept = new ArrayList<>();
        for (int i = merged.size() - 1; i >= 0; i--) {
            Row r = merged.get(i);
            int n = left.getOrDefault(r.getInt(1), keep);
            if (n > 0) {
                kept.add(r);
                left.put(r.getInt(1), n - 1);
            }
        }
        java.util.Collections.reverse(kept);
        state.update(RowFactory.create(CollectionConverters.asScala(kept)));  // arrays are Scala Seqs in a Row
        state.setTimeoutDuration(ttlMs);
        return out.iterator();
    }
}
