package cdcmonitor;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF5;

import scala.jdk.javaapi.CollectionConverters;

/**
 * The table pass: the rules judged over one (server, table)'s records (checks/table_pass.py). The
 * rules are declared in checks/lag.py, checks/snapshots.py and checks/schema_changes.py and named here
 * by the same codes ({@link #CODES}; tests/unit/test_decoder_rules.py holds both sides equal).
 *
 * <p>One judge, {@link Walk}, fed a group's records in {@link #PROCESSED} order (ts_ms, topic,
 * partition, offset) two ways: as a sorted stream on a classic session ({@link #stream}, through
 * {@link Passes}: memory does not grow with the table's records), or, over Spark Connect, as this
 * class's Java UDF over the group's collected records (held as one array, sorted here). A record is a
 * {@link Rec} (checks/table_pass.py's fields, in that order: the table's first change event and
 * whether a snapshot read is a copy come from the pass's SQL windows). The group's parameters: its lag
 * threshold; its name; whether it has a server and a table (a group without one is judged for lag
 * spikes only); whether the server's schema-change events are in the window (else schema changes are
 * not judged). Output: the findings, each (rule, topic, partition, offset, offsets, key, txn_id,
 * message, record_ts_ms). Orders are Spark's: ascending, a missing value before any.
 */
public final class TableJudge implements UDF5<scala.collection.Seq<Row>, Long, String, Boolean, Boolean, List<Row>> {
    private static final long serialVersionUID = 1L;

    static final String LAG_SPIKE = "lag_spike";
    static final String SNAPSHOT_RESTARTED = "snapshot_restarted";
    static final String SCHEMA_CHANGE_WITHOUT_DDL = "schema_change_without_ddl";
    static final String[] CODES = {LAG_SPIKE, SNAPSHOT_RESTARTED, SCHEMA_CHANGE_WITHOUT_DDL};
    static final int MAX_OFFSETS = 20;

    /** One record of the group, as checks/table_pass.py's records give it. */
    static final class Rec {
        final String topic;
        final int partition;
        final long offset;
        final Long recordTs;
        final String key;
        final String txnId;
        final Long tsMs;
        final Long lagMs;  // a change event in the lag scope with a valid lag; else null
        final boolean change;
        final boolean blocking;  // a blocking snapshot read
        final String schema;  // the value schema's hash (data events)
        final boolean ddl;  // a schema-change event about the table
        final Row since;  // the table's first change event: (record_ts_ms, topic, partition, offset); null: none or not judged
        final boolean readCopy;  // a blocking read repeating an earlier one of its key exactly (the key pass's copy)

        /** The record at fields {@code b..} of {@code r}. */
        Rec(Row r, int b) {
            topic = r.getString(b);
            partition = r.getInt(b + 1);
            offset = r.getLong(b + 2);
            recordTs = r.isNullAt(b + 3) ? null : r.getLong(b + 3);
            key = r.getString(b + 4);
            txnId = r.getString(b + 5);
            tsMs = r.isNullAt(b + 6) ? null : r.getLong(b + 6);
            lagMs = r.isNullAt(b + 7) ? null : r.getLong(b + 7);
            change = !r.isNullAt(b + 8) && r.getBoolean(b + 8);
            blocking = !r.isNullAt(b + 9) && r.getBoolean(b + 9);
            schema = r.getString(b + 10);
            ddl = !r.isNullAt(b + 11) && r.getBoolean(b + 11);
            since = r.isNullAt(b + 12) ? null : r.getStruct(b + 12);
            readCopy = !r.isNullAt(b + 13) && r.getBoolean(b + 13);
        }
    }

    /** The Rec's fields, then the group's parameters: where the parameters start in a stream's row. */
    static final int FIELDS = 14;

    private static final Comparator<String> TEXT = Comparator.nullsFirst(Comparator.naturalOrder());
    private static final Comparator<Long> NUMBER = Comparator.nullsFirst(Comparator.naturalOrder());
    /** (record time, topic, partition, offset): where a record is in the window. */
    private static final Comparator<Rec> AT = Comparator.comparing((Rec r) -> r.recordTs, NUMBER)
            .thenComparing(r -> r.topic, TEXT).thenComparingInt(r -> r.partition).thenComparingLong(r -> r.offset);
    private static final Comparator<Rec> AT_KEY = AT.thenComparing(r -> r.key, TEXT);
    /** A lag spike's order: (ts_ms, topic, partition, offset). */
    private static final Comparator<Rec> PROCESSED = Comparator.comparing((Rec r) -> r.tsMs, NUMBER)
            .thenComparing(r -> r.topic, TEXT).thenComparingInt(r -> r.partition).thenComparingLong(r -> r.offset);

    @Override
    public List<Row> call(scala.collection.Seq<Row> rows, Long threshold, String table, Boolean named, Boolean ddlRead) {
        return Passes.walkAll(rows, r -> new Rec(r, 0), PROCESSED,
                new Walk(threshold, table, Boolean.TRUE.equals(named), Boolean.TRUE.equals(ddlRead), null));
    }

    /** The table pass as a stream (Passes): rows (server, table, a Rec's fields, then the group's lag
     * threshold, whether it is named and whether its server's DDL was read), each table's in
     * {@link #PROCESSED} order; findings prefixed by the server and table. */
    public static org.apache.spark.sql.Dataset<Row> stream(org.apache.spark.sql.Dataset<Row> records,
            List<String> group, List<String> order, String outDdl) {
        int p = 2 + FIELDS;
        return Passes.walk(records, group, order, (key, first) -> {
            Walk walk = new Walk(first.isNullAt(p) ? null : first.getLong(p), key.getString(1),
                    !first.isNullAt(p + 1) && first.getBoolean(p + 1), !first.isNullAt(p + 2) && first.getBoolean(p + 2),
                    new Object[] {key.get(0), key.get(1)});
            return Passes.reading(walk, row -> new Rec(row, 2));
        }, outDdl);
    }

    /** A value schema version of the table: its first record and its last record time. */
    private static final class Version {
        Rec first;
        Long lastTs;
    }

    /** One table's records walked in {@link #PROCESSED} order, holding what its rules need: the lag spike
     * being read (its count, peak, first event and first offsets), the restarted snapshot's count and
     * first read, each value schema version's first record and last time, the DDL events' times. */
    static final class Walk implements Passes.Walk<Rec> {
        private final Long threshold;
        private final String table;
        private final boolean named;
        private final boolean ddlRead;
        private final Object[] prefix;  // the stream's (server, table); null: a UDF's finding
        // the lag spike being read
        private long runSize;
        private long peak;
        private Rec runFirst;
        private final PriorityQueue<Rec> runOffsets = new PriorityQueue<>(BY_TS_OFFSET.reversed());
        // the restarted snapshot
        private long reads;
        private Rec readAt;
        private Row since;
        // schema versions, in order of first appearance
        private final Map<String, Version> versions = new LinkedHashMap<>();
        private final List<Long> ddls = new ArrayList<>();

        Walk(Long threshold, String table, boolean named, boolean ddlRead, Object[] prefix) {
            this.threshold = threshold;
            this.table = table;
            this.named = named;
            this.ddlRead = ddlRead;
            this.prefix = prefix;
        }

        private Row finding(String rule, Rec r, List<Long> offsets, String txnId, String message) {
            Object[] f = {rule, r.topic, r.partition, r.offset, offsets, r.key, txnId, message, r.recordTs};
            if (prefix == null) {
                return RowFactory.create(f);
            }
            Object[] all = new Object[prefix.length + f.length];
            System.arraycopy(prefix, 0, all, 0, prefix.length);
            System.arraycopy(f, 0, all, prefix.length, f.length);
            return RowFactory.create(all);
        }

        @Override
        public void accept(Rec r, List<Row> out) {
            if (threshold != null && r.lagMs != null) {
                lag(r, out);
            }
            if (!named) {
                return;
            }
            if (r.blocking && !r.readCopy && r.since != null && after(r, r.since)) {
                since = r.since;
                reads++;
                if (readAt == null || AT_KEY.compare(r, readAt) < 0) {
                    readAt = r;
                }
            }
            if (ddlRead) {
                version(r);
            }
        }

        @Override
        public void end(List<Row> out) {
            endRun(out);
            if (readAt != null) {
                out.add(finding(SNAPSHOT_RESTARTED, readAt, List.of(readAt.offset), null, "snapshot of " + table
                        + " started again: " + reads + " snapshot event(s) after its changes were streaming (first change at "
                        + since.getString(1) + "[" + since.getInt(2) + "]@" + since.getLong(3) + ")"));
            }
            if (ddlRead) {
                schemaChanges(out);
            }
        }

        /** Runs of consecutive (by ts_ms) change events above the threshold: one finding per run, at its
         * first event, listing its first records by (ts_ms, offset). */
        private void lag(Rec r, List<Row> out) {
            if (r.lagMs <= threshold) {
                endRun(out);
                return;
            }
            if (runFirst == null) {
                runFirst = r;  // the stream's order is the run's: its first record is its first event
                peak = r.lagMs;
            }
            runSize++;
            peak = Math.max(peak, r.lagMs);
            runOffsets.add(r);
            if (runOffsets.size() > MAX_OFFSETS) {
                runOffsets.poll();
            }
        }

        private void endRun(List<Row> out) {
            if (runFirst == null) {
                return;
            }
            List<Rec> first = new ArrayList<>(runOffsets);
            first.sort(BY_TS_OFFSET);
            List<Long> offsets = new ArrayList<>();
            for (Rec r : first) {
                offsets.add(r.offset);
            }
            out.add(finding(LAG_SPIKE, runFirst, offsets, runFirst.txnId,
                    "lag spike: " + runSize + " event(s) above " + threshold + " ms, peak " + peak + " ms"));
            runFirst = null;
            runSize = 0;
            runOffsets.clear();
        }

        private void version(Rec r) {
            if (r.ddl) {
                if (r.recordTs != null) {
                    ddls.add(r.recordTs);
                }
                return;
            }
            if (r.schema == null) {
                return;
            }
            Version v = versions.computeIfAbsent(r.schema, h -> new Version());
            if (v.first == null || AT_KEY.compare(r, v.first) < 0) {
                v.first = r;
            }
            if (r.recordTs != null && (v.lastTs == null || r.recordTs > v.lastTs)) {
                v.lastTs = r.recordTs;
            }
        }

        /** Each change from one value schema version (in order of first appearance) to the next needs a
         * DDL event about the table timed from the old version's last record (its first, where the
         * versions interleave) to the new version's first: else one finding, at the new version's first
         * record. */
        private void schemaChanges(List<Row> out) {
            List<Version> all = new ArrayList<>(versions.values());
            if (all.size() < 2) {
                return;
            }
            all.sort(Comparator.comparing((Version v) -> v.first, AT_KEY).thenComparing(v -> v.lastTs, NUMBER));
            int n = all.size();
            for (int step = 0; step < n - 1; step++) {
                Version old = all.get(step);
                Rec at = all.get(step + 1).first;
                Long hi = at.recordTs;
                Long lo = old.lastTs != null && hi != null && old.lastTs <= hi ? old.lastTs : old.first.recordTs;
                boolean covered = false;
                if (lo != null && hi != null) {
                    for (long ts : ddls) {
                        if (ts >= lo && ts <= hi) {
                            covered = true;
                            break;
                        }
                    }
                }
                if (!covered) {
                    out.add(finding(SCHEMA_CHANGE_WITHOUT_DDL, at, List.of(at.offset), null, "value schema of " + table
                            + " changed (version " + (step + 2) + " of " + n + ") with no DDL event for it on the "
                            + "schema-change topic between the last record of the old version and this one"));
                }
            }
        }
    }

    /** Whether {@code r} is after {@code since} (record_ts_ms, topic, partition, offset) in {@link #AT} order. */
    private static boolean after(Rec r, Row since) {
        int c = NUMBER.compare(r.recordTs, since.isNullAt(0) ? null : since.getLong(0));
        if (c == 0) {
            c = TEXT.compare(r.topic, since.getString(1));
        }
        if (c == 0) {
            c = Integer.compare(r.partition, since.getInt(2));
        }
        if (c == 0) {
            c = Long.compare(r.offset, since.getLong(3));
        }
        return c > 0;
    }

    /** A run's offsets' order: (ts_ms, offset). */
    private static final Comparator<Rec> BY_TS_OFFSET = Comparator.comparing((Rec r) -> r.tsMs, NUMBER)
            .thenComparingLong(r -> r.offset);

    public static void main(String[] args) {
        for (String c : CODES) {
            System.out.println(c);
        }
    }
}
