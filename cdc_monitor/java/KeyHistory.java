package cdcmonitor;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.GroupState;

/**
 * watch's per-key history, the {@code K} groups of {@link Carry} (one call per key group, on the JVM),
 * and the key budget (the {@code ~} groups).
 *
 * <p>A group is one key of one topic: its records are emitted with role {@code new}, the facts of the
 * last {@code keep} records it held per partition with role {@code carried}, and it keeps the facts of
 * the last {@code keep} records per partition (by offset) for the next micro-batch. A held record at or
 * past a new record's offset in its partition is of an earlier log of that partition (the offsets went
 * back: the topic was deleted and created again): it is dropped, not carried.
 *
 * <p>A key leaves the store, its history dropped and one row per partition it held emitted (offset -1),
 * when it has been idle for {@code ttlMs} of processing time (role {@code evicted}) or when it is among
 * the least recently seen beyond the budget (role {@code capped}). The budget: {@code maxKeys} spread
 * evenly over the state partitions; each partition's {@code ~} group counts the keys seen in each batch
 * (an upper bound of the keys last seen then) and sets the horizon: the oldest batch time from which the
 * keys seen add up to no more than the partition's share. A key last seen before the horizon is capped
 * when its timeout comes: a key seen is looked at again {@code reviewMs} later, then after half the time the
 * horizon would take to pass it at the pace it advanced so far (again and again as it nears), and at its
 * TTL at the latest. So a partition holds at most its share, plus the keys seen within a review (or the
 * keys of one batch, when they alone are more).
 */
final class KeyHistory {
    private KeyHistory() {
    }

    static final long NONE = Long.MIN_VALUE;

    /** What a partition's budget says this batch: keys last seen before {@code at} are capped; {@code fullIn}
     * (ms) how soon, at the pace keys came so far, the budget fills when it is not full. */
    static final class Horizon {
        final long at;
        final long fullIn;

        Horizon(long at, long fullIn) {
            this.at = at;
            this.fullIn = fullIn;
        }
    }

    /** One call of a K group: its output rows added to {@code out}, its state updated or removed. */
    static void step(String ctx, Row held, Iterator<Row> rows, GroupState<Row> state, Carry cfg, List<Row> out) {
        Row st = Carry.unpack(held, Carry.KSTATE, ctx);
        List<Row> history = Carry.list(st, 1);
        String topic = ctx.substring(2, ctx.indexOf(Carry.SEP, 2));
        long now = state.getCurrentProcessingTimeMs();
        if (state.hasTimedOut()) {
            long seen = st.getLong(0);
            String role = now - seen >= cfg.ttlMs ? Carry.EVICTED
                    : cfg.horizon != null && seen < cfg.horizon.at ? Carry.CAPPED : null;
            if (role == null) {  // within the budget: looked at again when the horizon may have passed it
                state.setTimeoutDuration(Math.max(1, Math.min(cfg.ttlMs - (now - seen), rearm(cfg, seen))));
                return;
            }
            state.remove();
            Map<Integer, Row> parts = new TreeMap<>();
            for (Row h : history) {
                Object[] v = new Object[Carry.N];
                v[Carry.F_TOPIC] = topic;
                v[1] = h.getInt(1);
                v[2] = -1L;
                parts.putIfAbsent(h.getInt(1), Carry.out(RowFactory.create(v), role));
            }
            out.addAll(parts.values());
            return;
        }
        cfg.touched++;
        String payload = ctx.substring(ctx.indexOf(Carry.SEP, 2) + 1);
        List<Row> fresh = new ArrayList<>();
        List<Object> rests = new ArrayList<>();
        Map<Integer, Long> firstNew = new HashMap<>();  // per partition, the lowest new offset
        while (rows.hasNext()) {
            Row in = rows.next();
            Row rec = Carry.record(in);
            fresh.add(rec);
            rests.add(in.get(Carry.REST));
            firstNew.merge(rec.getInt(1), rec.getLong(2), Math::min);
        }
        Set<Integer> thin = new HashSet<>(Carry.<Integer>list(st, 2));
        Map<Long, Row> whole = new HashMap<>();  // contents of the records with every fact: a thin record's looks
        for (int i = 0; i < history.size(); i++) {
            if (!thin.contains(i) && !history.get(i).isNullAt(Carry.F_CONTENT)) {
                whole.putIfAbsent(history.get(i).getLong(Carry.F_CONTENT), history.get(i));
            }
        }
        for (Row r : fresh) {
            if (!r.isNullAt(Carry.F_CONTENT)) {
                whole.putIfAbsent(r.getLong(Carry.F_CONTENT), r);
            }
        }
        List<Row> merged = new ArrayList<>();
        Set<Row> wasThin = Collections.newSetFromMap(new IdentityHashMap<>());
        for (int at = 0; at < history.size(); at++) {
            Row h = history.get(at);
            Long first = firstNew.get(h.getInt(1));
            if (first != null && h.getLong(2) >= first) {
                continue;  // the partition's offsets went back (its topic created again): an earlier log's record
            }
            Object[] v = new Object[Carry.N];
            for (int i = 0; i < Carry.N; i++) {
                v[i] = h.get(i);
            }
            v[Carry.F_TOPIC] = topic;
            v[Carry.F_KEY_PAYLOAD] = payload;
            Row rec = RowFactory.create(v.clone());
            merged.add(rec);
            if (thin.contains(at)) {
                wasThin.add(rec);
                if (!h.isNullAt(Carry.F_CONTENT)) {
                    looks(v, whole.get(h.getLong(Carry.F_CONTENT)));
                }
            }
            out.add(Carry.out(RowFactory.create(v), Carry.CARRIED));
        }
        for (int i = 0; i < fresh.size(); i++) {
            merged.add(fresh.get(i));
            out.add(Carry.out(fresh.get(i), rests.get(i), Carry.NEW));
        }
        merged.sort(Comparator.comparingInt((Row r) -> r.getInt(1)).thenComparingLong(r -> r.getLong(2)));
        Set<Row> isNew = Collections.newSetFromMap(new IdentityHashMap<>());
        isNew.addAll(fresh);
        judge(topic, merged, isNew, true, out);
        Map<Integer, Integer> left = new HashMap<>();  // per partition, how many more to keep
        List<Row> kept = new ArrayList<>();
        for (int i = merged.size() - 1; i >= 0; i--) {
            Row r = merged.get(i);
            int n = left.getOrDefault(r.getInt(1), cfg.keep);
            if (n > 0) {
                kept.add(r);
                left.put(r.getInt(1), n - 1);
            }
        }
        Collections.reverse(kept);
        boolean[] keepWhole = whole(kept);
        List<Integer> thinned = new ArrayList<>();
        for (int i = 0; i < kept.size(); i++) {
            if (keepWhole[i] && !wasThin.contains(kept.get(i))) {
                kept.set(i, Carry.without(kept.get(i), WHOLE));
            } else {
                kept.set(i, Carry.without(kept.get(i), THIN));
                thinned.add(i);
            }
        }
        state.update(Carry.pack(RowFactory.create(now, Carry.seq(kept), Carry.seq(thinned)), Carry.KSTATE, ctx));
        state.setTimeoutDuration(cfg.maxKeys > 0 ? Math.max(1, Math.min(cfg.reviewMs, cfg.ttlMs)) : cfg.ttlMs);
    }

    /**
     * The key pass of a key's records (or, {@code keyed} false, of a topic partition's data events without
     * a key: their copies only) in the operator: {@code records}, its kept records' facts and the batch's new
     * ones in {@link KeyJudge#ORDER}, walked by KeyJudge's walk, each data event's copies found among them as
     * the scan's window finds them (the first earlier record of its partition with its content, {@link
     * Carry#F_CONTENT}); the findings pointing at a record of {@code fresh} (null: every record is new) added
     * to {@code out} as {@link Carry#FOUND} rows. A finding on a kept record was counted in its own batch.
     */
    static void judge(String topic, List<Row> records, Set<Row> fresh, boolean keyed, List<Row> out) {
        KeyJudge.Walk walk = new KeyJudge.Walk(keyed, null);
        Map<Integer, Map<Long, Row>> firsts = new HashMap<>();  // per partition, each content's first record
        List<Row> found = new ArrayList<>();
        List<Row> first = new ArrayList<>();
        Set<List<Object>> at = new HashSet<>();  // the new records' partition and offset
        for (Row r : records) {
            Row copied = null;
            if (!r.isNullAt(Carry.F_CONTENT)) {
                copied = firsts.computeIfAbsent(r.getInt(1), p -> new HashMap<>()).putIfAbsent(r.getLong(Carry.F_CONTENT), r);
            }
            if (fresh == null || fresh.contains(r)) {
                at.add(List.of(r.getInt(1), r.getLong(2)));
            }
            walk.accept(rec(r, copied), found);
        }
        walk.end(found, first);
        for (Row f : found) {
            if (at.contains(List.of(f.getInt(1), f.getLong(2)))) {
                out.add(Carry.found(topic, f, false));
            }
        }
        for (Row f : first) {
            if (at.contains(List.of(f.getInt(1), f.getLong(2)))) {
                out.add(Carry.found(topic, f, true));
            }
        }
    }

    /** A record's facts as KeyJudge reads it (checks/ordering.py's key records), {@code copied} the first
     * record of its partition with its content when it is a copy of one; from its partition's start (the
     * driver keeps a first-record finding only where it was: KeyJudge.Walk.end's {@code first}). */
    private static KeyJudge.Rec rec(Row r, Row copied) {
        Long copyOf = copied == null ? null : copied.getLong(2);
        return new KeyJudge.Rec(r.getInt(1), r.getLong(2), r.isNullAt(Carry.F_RECORD_TS) ? null : r.getLong(Carry.F_RECORD_TS),
                TOMBSTONE_KIND.equals(r.getString(Carry.F_KIND)), r.getString(Carry.F_OP),
                r.isNullAt(SNAPSHOT) ? null : r.getBoolean(SNAPSHOT),
                r.isNullAt(POSITION) ? null : r.getList(POSITION), processed(r), true, r.getString(Carry.F_KEY),
                r.getString(Carry.F_TXN), r.getString(Carry.F_SERVER), r.getString(Carry.F_TABLE), copyOf,
                copied == null ? null : processed(copied));
    }

    /** When the connector processed a record (checks/ordering.py's PROCESSED): ts_us as text, else ts_ms as sent. */
    private static String processed(Row r) {
        return !r.isNullAt(TS_US) ? Long.toString(r.getLong(TS_US)) : r.getString(TS_MS_RAW);
    }

    static final int SNAPSHOT = Carry.FACT.fieldIndex("snapshot"), POSITION = Carry.FACT.fieldIndex("position"),
            TS_US = Carry.FACT.fieldIndex("ts_us"), TS_MS_RAW = Carry.FACT.fieldIndex("ts_ms_raw");
    private static final String TOMBSTONE_KIND = "tombstone";  // (the events' kind of a tombstone)

    /**
     * What no kept record keeps: its topic, key payload (the group's key says them), key text (a finding on
     * a carried record is not counted) and transaction id (the transaction checks read a carried event's
     * from the server group's copy of it, which it holds while the transaction is not final: a key's copy
     * of an event of a finished transaction is judged nowhere).
     */
    static final int[] WHOLE = fields("topic", "key", "key_payload", "txn_id");
    /** What a thin record does not keep (besides topic, key and key payload, which no kept record keeps):
     * its content's parts (the checks compare its {@code content_hash} instead), its transaction, position
     * and source lsn and sequence. */
    static final int[] THIN = fields("topic", "key", "key_payload", "txn_id", "txn_total_order",
            "txn_collection_order", "position", "source_lsn", "source_sequence", "before", "after", "update_hash",
            "value_hash");
    /** The fields of a record the checks' copies compare (checks/ordering.py's CONTENT_HASH), op aside. */
    static final int[] CONTENT = fields("before", "after", "position", "value_hash", "txn_total_order", "update_hash");
    static final int BEFORE = Carry.FACT.fieldIndex("before");
    // (KeyJudge's change events: the ops whose previous one the key rules compare a record with)
    private static final Set<String> CHANGE_OPS = Set.of("c", "u", "d", "r");
    private static final String DATA_KIND = "data";  // (the events' kind of a data event, not a tombstone)

    private static int[] fields(String... names) {
        int[] at = new int[names.length];
        for (int i = 0; i < names.length; i++) {
            at[i] = Carry.FACT.fieldIndex(names[i]);
        }
        return at;
    }

    /**
     * Which of a key's kept records (per partition in offset order) keep every fact: per partition its newest
     * record, its newest change event that copies no earlier kept record (the key rules' previous record for
     * the next records: position, op, snapshot) and the change events after that one (copies, which become
     * that previous record when what they copy leaves). The others are thin: the key pass reads of them only
     * their place, times, op and content (a later record that copies one), and walks past them before the
     * previous record. A record's copies are found among the kept ones, as the next batch's checks find them.
     * (Only data events have a content: tombstones keep their few facts.)
     */
    static boolean[] whole(List<Row> kept) {
        boolean[] out = new boolean[kept.size()];
        int from = 0;
        while (from < kept.size()) {
            int part = kept.get(from).getInt(1);
            int to = from;
            while (to < kept.size() && kept.get(to).getInt(1) == part) {
                to++;
            }
            Set<Long> contents = new HashSet<>();
            int prev = -1;
            for (int i = from; i < to; i++) {
                Row r = kept.get(i);
                boolean copy = !r.isNullAt(Carry.F_CONTENT) && !contents.add(r.getLong(Carry.F_CONTENT));
                if (change(r) && !copy) {
                    prev = i;
                }
            }
            for (int i = from; i < to; i++) {  // (a record without a content keeps its facts: none to stand in)
                out[i] = i == to - 1 || (prev >= 0 && i >= prev && change(kept.get(i)))
                        || kept.get(i).isNullAt(Carry.F_CONTENT);
            }
            from = to;
        }
        return out;
    }

    private static boolean change(Row r) {
        String op = r.getString(Carry.F_OP);  // (null on a tombstone: Set.of refuses to look a null up)
        return DATA_KIND.equals(r.getString(Carry.F_KIND)) && op != null && CHANGE_OPS.contains(op);
    }

    /**
     * A thin record's content fields as the checks will compare them ({@code v}: its facts): those of a record
     * of the window with the same content ({@code like}: its copies are found as before), else a stand-in
     * no record with other content has (a text no digest is), so thin records of one content still copy
     * each other.
     */
    static void looks(Object[] v, Row like) {
        for (int f : CONTENT) {
            v[f] = like == null ? null : like.get(f);
        }
        if (like == null) {
            v[BEFORE] = "~" + v[Carry.F_CONTENT];
        }
    }

    /** How long until a key last seen at {@code seen}, still within the budget, is looked at again. */
    private static long rearm(Carry cfg, long seen) {
        if (cfg.maxKeys <= 0 || cfg.horizon == null) {
            return cfg.ttlMs;
        }
        // half the time the horizon would take at the pace it moved so far (it can speed up: a key is
        // looked at a few more times as the horizon nears it, and capped within a review of passing it)
        if (cfg.horizon.at == NONE) {
            return Math.max(cfg.reviewMs, cfg.horizon.fullIn / 2);
        }
        return Math.max(cfg.reviewMs, (seen - cfg.horizon.at) / 2);
    }

    /** The budget group of a state partition: this batch's keys added to what it saw, the horizon set. */
    static Horizon budget(Row held, GroupState<Row> state, Carry cfg) {
        long now = state.getCurrentProcessingTimeMs();
        long share = Math.max(1, (cfg.maxKeys + cfg.statePartitions - 1) / cfg.statePartitions);
        Row st = Carry.unpack(held, Carry.BSTATE);
        List<long[]> seen = new ArrayList<>();
        for (Row r : Carry.<Row>list(st, 0)) {
            seen.add(new long[] {r.getLong(0), r.getLong(1)});
        }
        if (cfg.touched > 0) {
            seen.add(new long[] {now, cfg.touched});
        }
        long at = NONE;
        long sum = 0;
        int from = 0;
        for (int i = seen.size() - 1; i >= 0; i--) {
            if (sum + seen.get(i)[1] > share) {
                at = i + 1 < seen.size() ? seen.get(i + 1)[0] : now;
                from = i + 1;
                break;
            }
            sum += seen.get(i)[1];
        }
        seen = new ArrayList<>(seen.subList(from, seen.size()));  // older ones are beyond the horizon
        while (seen.size() > 256) {  // the oldest two as one, at the older time: still an upper bound
            long[] a = seen.remove(0);
            seen.get(0)[0] = a[0];
            seen.get(0)[1] += a[1];
        }
        long fullIn = cfg.ttlMs;
        if (at == NONE && !seen.isEmpty() && now > seen.get(0)[0]) {
            double perMs = (double) sum / (now - seen.get(0)[0]);
            fullIn = (long) Math.min(cfg.ttlMs, (share - sum) / Math.max(perMs, 1e-9));
        }
        List<Row> rows = new ArrayList<>();
        for (long[] s : seen) {
            rows.add(RowFactory.create(s[0], s[1]));
        }
        state.update(Carry.pack(RowFactory.create(Carry.seq(rows)), Carry.BSTATE));
        return new Horizon(at, fullIn);
    }
}
