package cdcmonitor;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.GroupState;

/**
 * watch's per-key history, the {@code K} groups of {@link Carry} (one call per key group, on the JVM).
 *
 * <p>A group is one key of one topic: its records are emitted with role {@code new}, the last
 * {@code keep} records it held per partition with role {@code carried}, and it keeps the last
 * {@code keep} records per partition (by offset) for the next micro-batch (the state's {@code h}). A
 * held record at or past a new record's offset in its partition is of an earlier log of that
 * partition (the offsets went back: the topic was deleted and created again): it is dropped, not
 * carried. A key idle for {@code ttlMs} of processing time times out: its history is dropped and one
 * {@code evicted} row (offset -1) is emitted per partition it held.
 */
final class KeyHistory {
    private KeyHistory() {
    }

    /** One call of a K group: its output rows added to {@code out}, its state updated or removed. */
    static void step(Row held, Iterator<Row> rows, GroupState<Row> state, int keep, long ttlMs, List<Row> out) {
        List<Row> history = Carry.list(held, Carry.S_H);
        if (state.hasTimedOut()) {
            state.remove();
            Map<String, Row> parts = new TreeMap<>();
            for (Row h : history) {
                Row ev = RowFactory.create(h.getString(0), h.getInt(1), -1L, null, null, 0L, 0, null);
                parts.putIfAbsent(h.getString(0) + Carry.SEP + h.getInt(1), Carry.out(ev, Carry.EVICTED));
            }
            out.addAll(parts.values());
            return;
        }
        List<Row> fresh = new ArrayList<>();
        Map<Integer, Long> firstNew = new HashMap<>();  // per partition, the lowest new offset
        while (rows.hasNext()) {
            Row rec = Carry.record(rows.next());
            fresh.add(rec);
            firstNew.merge(rec.getInt(1), rec.getLong(2), Math::min);
        }
        List<Row> merged = new ArrayList<>();
        for (Row h : history) {
            Long first = firstNew.get(h.getInt(1));
            if (first != null && h.getLong(2) >= first) {
                continue;  // the partition's offsets went back (its topic created again): an earlier log's record
            }
            merged.add(h);
            out.add(Carry.out(h, Carry.CARRIED));
        }
        for (Row rec : fresh) {
            merged.add(rec);
            out.add(Carry.out(rec, Carry.NEW));
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
        Collections.reverse(kept);
        state.update(Carry.state(kept, null, null, null, null, null, null));
        state.setTimeoutDuration(ttlMs);
    }
}
