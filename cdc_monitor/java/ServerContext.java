package cdcmonitor;

import static cdcmonitor.Carry.COLLS;
import static cdcmonitor.Carry.COUNT;
import static cdcmonitor.Carry.SEEN;
import static cdcmonitor.Carry.SKIND;
import static cdcmonitor.Carry.STATUS;
import static cdcmonitor.Carry.TBL;
import static cdcmonitor.Carry.TS;
import static cdcmonitor.Carry.TXN;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;

/**
 * watch's server context, the {@code S} groups of {@link Carry}: per server a copy of every
 * transaction marker and of every data event naming a transaction.
 *
 * <p>Keeps the open transactions (BEGIN, no END, no later BEGIN in its partition: Debezium writes END
 * when the next transaction begins) with their data events, orphan candidates (a transaction on no
 * marker yet: kept until the server's transaction topic has passed their record time, or
 * {@code awaitMs} of wall time; a server whose transaction topic is neither read yet nor among the
 * stream's transaction servers holds none) and the ids of the last {@code finalMemory} finalized
 * transactions. A transaction whose END counts more events than have been seen is held (not final,
 * its END emitted as {@code pending}) while some partition of a short collection has not shown a
 * record at or after the END's time (a per-trigger cap can read the small transaction topic ahead
 * of the data topics), at most {@code awaitMs} of wall time; the newest record time per data
 * partition ({@code progress}) is kept for this.
 *
 * <p>Emits the rows it held ({@code carried}; a held data event of no open transaction:
 * {@code candidate}), new events of a transaction finalized in an earlier batch ({@code final}: no
 * orphan) and the END rows of pending transactions ({@code pending}). New records themselves are
 * emitted by their K or P group.
 */
public final class ServerContext {
    private ServerContext() {
    }

    /** One call's outcome: the rows emitted, the new state, whether rows are held (a timeout is due). */
    public static final class Step {
        final List<Row> out;
        final Row state;
        final boolean hold;

        Step(List<Row> out, Row state, boolean hold) {
            this.out = out;
            this.state = state;
            this.hold = hold;
        }

        public List<Row> out() {
            return out;
        }

        public Row state() {
            return state;
        }
    }

    /** A fed row ({@link Carry#input}) as held: without ctx, with the wall time it was first seen. */
    private static Row held(Row fed, long now) {
        Object[] v = new Object[Carry.HELD.size()];
        for (int i = 0; i < SEEN; i++) {
            v[i] = fed.get(i + 1);
        }
        v[SEEN] = now;
        return RowFactory.create(v);
    }

    private static boolean is(Row r, String skind) {
        return skind.equals(r.getString(SKIND));
    }

    private static long tsOrZero(Row r) {
        return r.isNullAt(TS) ? 0L : r.getLong(TS);
    }

    private static String partitionKey(String topic, int partition) {
        return topic + Carry.SEP + partition;
    }

    /**
     * One call of the S group of {@code server}: {@code st} its state ({@link Carry#SSTATE}; null: none
     * yet), {@code fed} its new rows ({@link Carry#input}), {@code now} wall time in milliseconds. (Public for the tests,
     * which call it with hand-made rows and clocks.)
     */
    public static Step step(Row st, List<Row> fed, long now, Carry cfg, String server) {
        List<Row> held = Carry.list(st, Carry.S_ROWS);
        List<String> fin = new ArrayList<>(Carry.list(st, Carry.S_FINAL));
        Set<String> finalSet = new HashSet<>(fin);
        Set<String> wasOpen = new HashSet<>(Carry.list(st, Carry.S_OPEN));
        List<Row> out = new ArrayList<>();
        for (Row r : held) {
            boolean candidate = is(r, Carry.DATA) && !wasOpen.contains(r.getString(TXN));
            out.add(Carry.out(r, candidate ? Carry.CANDIDATE : Carry.CARRIED));
        }
        Map<String, Row> progress = new LinkedHashMap<>();  // data partition -> (topic, partition, collection, newest record time)
        for (Row p : Carry.<Row>list(st, Carry.S_PROGRESS)) {
            progress.put(partitionKey(p.getString(0), p.getInt(1)), p);
        }
        List<Row> rows = new ArrayList<>(held);
        for (Row f : fed) {
            Row r = held(f, now);
            rows.add(r);
            if (is(r, Carry.DATA) && !r.isNullAt(TS)) {
                String tp = partitionKey(r.getString(0), r.getInt(1));
                Row p = progress.get(tp);
                if (p == null || p.getLong(3) < r.getLong(TS)) {
                    progress.put(tp, RowFactory.create(r.getString(0), r.getInt(1), r.getString(TBL), r.getLong(TS)));
                }
            }
        }
        List<Row> markers = new ArrayList<>();
        Map<String, List<Row>> dataOf = new HashMap<>();
        for (Row r : rows) {
            if (is(r, Carry.MARKER)) {
                markers.add(r);
            } else if (is(r, Carry.DATA)) {
                dataOf.computeIfAbsent(r.getString(TXN), k -> new ArrayList<>()).add(r);
            }
        }
        Set<String> openIds = new HashSet<>();
        Map<String, Row> ends = transactions(markers, openIds);
        List<String> pending = new ArrayList<>();
        for (Map.Entry<String, Row> e : ends.entrySet()) {
            if (!openIds.contains(e.getKey())
                    && isShort(e.getValue(), dataOf.getOrDefault(e.getKey(), List.of()), progress, now, cfg)) {
                pending.add(e.getKey());
            }
        }
        pending.sort(Comparator.nullsFirst(Comparator.naturalOrder()));
        Set<String> heldIds = new HashSet<>(openIds);
        heldIds.addAll(pending);
        Set<String> onMarker = new HashSet<>();
        Set<String> finalized = new LinkedHashSet<>();
        long horizon = st == null || st.isNullAt(Carry.S_HORIZON) ? -1L : st.getLong(Carry.S_HORIZON);
        for (Row r : markers) {
            String txn = r.getString(TXN);
            onMarker.add(txn);
            if (!heldIds.contains(txn) && !finalSet.contains(txn)) {
                finalized.add(txn);
            }
            if (!r.isNullAt(TS)) {
                horizon = Math.max(horizon, r.getLong(TS));  // the newest marker time
            }
        }
        // a server whose transaction topic is neither read yet nor in the stream has no orphans: nothing to hold
        boolean awaited = horizon >= 0 || cfg.transactionServers.contains(server);
        List<Row> keep = new ArrayList<>();
        List<Row> knownFinal = new ArrayList<>();
        for (Row r : rows) {
            String txn = r.getString(TXN);
            if (is(r, Carry.MARKER) || onMarker.contains(txn)) {
                if (heldIds.contains(txn)) {
                    keep.add(r);
                }
            } else if (finalSet.contains(txn)) {
                knownFinal.add(r);
            } else if (awaited && tsOrZero(r) > horizon && now - r.getLong(SEEN) < cfg.awaitMs) {
                keep.add(r);  // an orphan candidate while the transaction topic has not reached its time
            }
        }
        for (Row r : knownFinal) {
            out.add(Carry.out(r, Carry.FINAL));
        }
        for (String t : pending) {  // their END rows (not final in this batch, whatever the checks make of them)
            out.add(Carry.out(ends.get(t), Carry.PENDING));
        }
        fin.addAll(finalized);
        if (fin.size() > cfg.finalMemory) {
            fin = new ArrayList<>(fin.subList(fin.size() - cfg.finalMemory, fin.size()));
        }
        List<String> open = new ArrayList<>(heldIds);
        open.sort(Comparator.nullsFirst(Comparator.naturalOrder()));
        Row state = Carry.sstate(keep, fin, horizon, open, new ArrayList<>(progress.values()));
        return new Step(out, state, !keep.isEmpty());
    }

    /**
     * The END row of every transaction with one (the first met), and into {@code openIds} the open
     * transactions: a BEGIN, no END, and no later BEGIN in its transaction-topic partition (the
     * checks' "open" status).
     */
    static Map<String, Row> transactions(List<Row> markers, Set<String> openIds) {
        Map<String, Long> lastBegin = new HashMap<>();  // per transaction-topic partition, its newest BEGIN
        Map<List<Object>, long[]> txns = new LinkedHashMap<>();  // (topic, partition, txn) -> {first BEGIN offset or -1, END seen}
        Map<String, Row> ends = new LinkedHashMap<>();
        for (Row r : markers) {
            String part = partitionKey(r.getString(0), r.getInt(1));
            long[] t = txns.computeIfAbsent(java.util.Arrays.asList(r.getString(0), r.getInt(1), r.getString(TXN)),
                    k -> new long[] {-1L, 0L});
            if ("BEGIN".equals(r.getString(STATUS))) {
                long offset = r.getLong(2);
                t[0] = t[0] < 0 ? offset : Math.min(t[0], offset);
                lastBegin.merge(part, offset, Math::max);
            } else {
                t[1] = 1L;
                ends.putIfAbsent(r.getString(TXN), r);
            }
        }
        for (Map.Entry<List<Object>, long[]> e : txns.entrySet()) {
            long[] t = e.getValue();
            String part = partitionKey((String) e.getKey().get(0), (Integer) e.getKey().get(1));
            if (t[0] >= 0 && t[1] == 0L && lastBegin.get(part) == t[0]) {
                openIds.add((String) e.getKey().get(2));
            }
        }
        return ends;
    }

    /**
     * Whether an ended transaction may still be missing events that are on their way: its END counts
     * more than have been seen and some partition of a short collection has not yet shown a record at
     * or after the END's time (or the collection has shown none; with the topics' partition counts, a
     * partition that has shown no event of a transaction yet counts as not shown). For at most
     * {@code awaitMs}: a transaction that is really incomplete is reported that much later when its
     * table is quiet.
     */
    static boolean isShort(Row end, List<Row> data, Map<String, Row> progress, long now, Carry cfg) {
        if (now - end.getLong(SEEN) >= cfg.awaitMs) {
            return false;
        }
        Map<List<Object>, String> seen = new HashMap<>();  // a re-delivered event once
        for (Row r : data) {
            seen.put(java.util.Arrays.asList(r.getString(0), r.getInt(1), r.getLong(2)), r.getString(TBL));
        }
        Map<String, Integer> byColl = new HashMap<>();
        for (String tbl : seen.values()) {
            byColl.merge(tbl, 1, Integer::sum);
        }
        Set<String> shortColls = new HashSet<>();
        for (Row c : Carry.<Row>list(end, COLLS)) {
            if (!c.isNullAt(1) && byColl.getOrDefault(c.getString(0), 0) < c.getLong(1)) {
                shortColls.add(c.getString(0));
            }
        }
        if (shortColls.isEmpty() && (end.isNullAt(COUNT) || seen.size() >= end.getLong(COUNT))) {
            return false;
        }
        long endTs = tsOrZero(end);
        // (an END whose total is short and that names no collection: any data partition may bring them)
        Set<String> topics = new HashSet<>();
        Set<String> shown = new HashSet<>();
        for (Row p : progress.values()) {
            shown.add(p.getString(2));
            if (shortColls.isEmpty() || shortColls.contains(p.getString(2))) {
                if (p.getLong(3) < endTs) {
                    return true;
                }
                topics.add(p.getString(0));
            }
        }
        if (!cfg.topicPartitions.isEmpty()) {  // the short collections' partitions that have not shown an event of a transaction yet
            for (Row r : data) {
                if (shortColls.isEmpty() || shortColls.contains(r.getString(TBL))) {
                    topics.add(r.getString(0));
                }
            }
            for (String t : topics) {
                for (int p = 0; p < cfg.topicPartitions.getOrDefault(t, 0); p++) {
                    if (!progress.containsKey(partitionKey(t, p))) {
                        return true;
                    }
                }
            }
        }
        for (String c : shortColls) {
            if (!shown.contains(c)) {
                return true;
            }
        }
        return false;
    }
}
