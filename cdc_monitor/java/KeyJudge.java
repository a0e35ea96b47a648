package cdcmonitor;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF2;

import scala.jdk.javaapi.CollectionConverters;

/**
 * The key pass: every rule of the ordering check judged over one key's records, in one call (a Java
 * UDF over the key's records collected by the pass's one aggregate: checks/ordering.py). Spark's
 * public UDF API; the rules are declared in checks/ordering.py and named here by the same codes
 * ({@link #CODES}; tests/unit/test_decoder_rules.py holds both sides equal).
 *
 * <p>Input: the records of one (topic, key payload), each a {@link Rec} (the struct
 * checks/ordering.py builds, fields in that order), in any order; and whether the group has a key
 * (keyless data events of a topic are one group: only copies are judged among them). Output: the
 * findings, each (rule, partition, offset, offsets, key, txn_id, message, server, table, record_ts_ms).
 *
 * <p>Memory: one group's records at a time, as narrow rows (no row images: their hash), then
 * per partition in offset order, one pass.
 */
public final class KeyJudge implements UDF2<scala.collection.Seq<Row>, Boolean, List<Row>> {
    private static final long serialVersionUID = 1L;

    static final String POSITION_REGRESSION = "position_regression";
    static final String DUPLICATE = "duplicate";
    static final String REPLAYED_AFTER_RESTART = "replayed_after_restart";
    static final String MISSING_CREATE = "missing_create";
    static final String EVENT_AFTER_DELETE = "event_after_delete";
    static final String TOMBSTONE_WITHOUT_DELETE = "tombstone_without_delete";
    static final String KEY_IN_MULTIPLE_PARTITIONS = "key_in_multiple_partitions";
    static final String[] CODES = {
        POSITION_REGRESSION, DUPLICATE, REPLAYED_AFTER_RESTART, MISSING_CREATE, EVENT_AFTER_DELETE,
        TOMBSTONE_WITHOUT_DELETE, KEY_IN_MULTIPLE_PARTITIONS,
    };
    static final int MAX_OFFSETS = 20;

    /** One record of the group, as checks/ordering.py's struct gives it. */
    static final class Rec {
        final int partition;
        final long offset;
        final Long recordTs;
        final boolean tombstone;
        final String op;
        final Boolean snapshot;
        final List<Object> position;
        final Long content;
        final String processed;
        final boolean fromStart;
        final String key;
        final String txnId;
        final String server;
        final String table;

        Rec(Row r) {
            partition = r.getInt(0);
            offset = r.getLong(1);
            recordTs = r.isNullAt(2) ? null : r.getLong(2);
            tombstone = !r.isNullAt(3) && r.getBoolean(3);
            op = r.getString(4);
            snapshot = r.isNullAt(5) ? null : r.getBoolean(5);
            position = r.isNullAt(6) ? null : CollectionConverters.asJava(r.<Object>getSeq(6));
            content = r.isNullAt(7) ? null : r.getLong(7);
            processed = r.getString(8);
            fromStart = !r.isNullAt(9) && r.getBoolean(9);
            key = r.getString(10);
            txnId = r.getString(11);
            server = r.getString(12);
            table = r.getString(13);
        }

        boolean data() {
            return !tombstone;
        }
    }

    /** Where a finding points and what it says. */
    private static Row finding(String rule, Rec r, List<Long> offsets, String message) {
        return RowFactory.create(rule, r.partition, r.offset, offsets, r.key, r.txnId, message, r.server, r.table,
                r.recordTs);
    }

    private static Row finding(String rule, Rec r, String message) {
        return finding(rule, r, List.of(r.offset), message);
    }

    @Override
    public List<Row> call(scala.collection.Seq<Row> rows, Boolean keyed) {
        List<Rec> recs = new ArrayList<>(rows.size());
        for (Row r : CollectionConverters.asJava(rows)) {
            recs.add(new Rec(r));
        }
        return judge(recs, Boolean.TRUE.equals(keyed));
    }

    static List<Row> judge(List<Rec> recs, boolean keyed) {
        recs.sort(Comparator.comparingInt((Rec r) -> r.partition).thenComparingLong(r -> r.offset));
        List<Row> out = new ArrayList<>();
        // the partition of the key's first record (by record time) is its home
        Rec first = null;
        TreeSet<Integer> partitions = new TreeSet<>();
        for (Rec r : recs) {
            partitions.add(r.partition);
            if (first == null || HOME.compare(r, first) < 0) {
                first = r;
            }
        }
        boolean multi = keyed && partitions.size() > 1;
        int home = first == null ? 0 : first.partition;
        int i = 0;
        while (i < recs.size()) {
            int j = i;
            while (j < recs.size() && recs.get(j).partition == recs.get(i).partition) {
                j++;
            }
            partition(recs.subList(i, j), keyed, multi, home, out);
            i = j;
        }
        return out;
    }

    /** Smallest record time first (a missing one before any), then partition and offset. */
    private static final Comparator<Rec> HOME = Comparator
            .comparing((Rec r) -> r.recordTs, Comparator.nullsFirst(Comparator.naturalOrder()))
            .thenComparingInt(r -> r.partition).thenComparingLong(r -> r.offset);

    /** One partition's records of the key, in offset order. */
    private static void partition(List<Rec> recs, boolean keyed, boolean multi, int home, List<Row> out) {
        Map<Long, Rec> originals = new HashMap<>();  // content -> its first copy
        String prevAnyOp = null;  // the previous record's op ('~' for a tombstone), null for none (or no op)
        boolean any = false;
        Rec prev = null;  // the previous data event that is no copy (c, u, d, r)
        int n = 0;
        for (Rec r : recs) {
            String before = any ? prevAnyOp : null;
            any = true;
            prevAnyOp = r.data() ? r.op : "~";
            if (r.data() && r.content != null) {
                Rec original = originals.putIfAbsent(r.content, r);
                if (original != null) {
                    copy(r, original, out);
                    continue;
                }
            }
            if (!keyed) {
                continue;
            }
            if (r.tombstone) {
                if (before == null ? r.fromStart && !multi : !before.equals("d")) {
                    out.add(finding(TOMBSTONE_WITHOUT_DELETE, r, before == null
                            ? "tombstone is the key's first record" : "tombstone not preceded by a delete"));
                }
                continue;
            }
            if (r.op == null || !(r.op.equals("c") || r.op.equals("u") || r.op.equals("d") || r.op.equals("r"))) {
                continue;
            }
            n++;
            boolean updateOrDelete = r.op.equals("u") || r.op.equals("d");
            if (prev != null && r.position != null && prev.position != null && Boolean.FALSE.equals(r.snapshot)
                    && Boolean.FALSE.equals(prev.snapshot) && comparePositions(r.position, prev.position) < 0) {
                out.add(finding(POSITION_REGRESSION, r, "source position " + text(r.position)
                        + " is behind the previous " + text(prev.position)));
            }
            if (prev != null && updateOrDelete && "d".equals(prev.op)) {
                out.add(finding(EVENT_AFTER_DELETE, r, "op " + r.op + " after the key was deleted"));
            }
            if (n == 1 && updateOrDelete && r.fromStart && !multi) {
                out.add(finding(MISSING_CREATE, r, "op " + r.op + " of a key never created in this partition"));
            }
            prev = r;
        }
        if (multi && recs.get(0).partition != home) {
            List<Long> offsets = new ArrayList<>();
            for (Rec r : recs) {
                if (offsets.size() == MAX_OFFSETS) {
                    break;
                }
                offsets.add(r.offset);
            }
            out.add(finding(KEY_IN_MULTIPLE_PARTITIONS, recs.get(0), offsets,
                    "key also in partition " + home + " of this topic"));
        }
    }

    /** A copy of an earlier data event: the same record again, or the same change processed again. */
    private static void copy(Rec r, Rec original, List<Row> out) {
        if (Objects.equals(original.processed, r.processed)) {
            out.add(finding(DUPLICATE, r, "the record at offset " + original.offset
                    + " again: same op, row, source position and processing time"));
        } else {
            out.add(finding(REPLAYED_AFTER_RESTART, r, "the change event at offset " + original.offset
                    + " sent again (same op, row and source position), processed again at "
                    + (r.processed == null ? "?" : r.processed) + " (first at "
                    + (original.processed == null ? "?" : original.processed)
                    + "): the connector resumed from an earlier committed offset"));
        }
    }

    /** Spark's order of two arrays of bigint: element by element (a null first), then the shorter first. */
    static int comparePositions(List<Object> a, List<Object> b) {
        for (int k = 0; k < Math.min(a.size(), b.size()); k++) {
            Object x = a.get(k);
            Object y = b.get(k);
            if (x == null || y == null) {
                if (x != y) {
                    return x == null ? -1 : 1;
                }
                continue;
            }
            int c = Long.compare((Long) x, (Long) y);
            if (c != 0) {
                return c;
            }
        }
        return Integer.compare(a.size(), b.size());
    }

    /** An array of bigint as Spark casts it to text: [1, 2, null]. */
    static String text(List<Object> position) {
        return Arrays.toString(position.toArray());
    }

    /** {@code rules}: the rules this judge names, one per line. */
    public static void main(String[] args) {
        for (String c : CODES) {
            System.out.println(c);
        }
    }
}
