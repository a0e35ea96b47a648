package cdcmonitor;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF5;

import scala.jdk.javaapi.CollectionConverters;

/**
 * The table pass: the rules judged over one (server, table)'s records, in one call (a Java UDF over
 * the records the pass's one aggregate collects: checks/table_pass.py). Spark's public UDF API; the
 * rules are declared in checks/lag.py, checks/snapshots.py and checks/schema_changes.py and named here
 * by the same codes ({@link #CODES}; tests/unit/test_decoder_rules.py holds both sides equal).
 *
 * <p>Input: the group's records, each a {@link Rec} (the struct checks/table_pass.py builds, fields in
 * that order), in any order; the table's lag threshold; the table's name; whether the group has a
 * server and a table (a group without one is judged for lag spikes only); whether the server's
 * schema-change events are in the window (else schema changes are not judged). Output: the findings,
 * each (rule, topic, partition, offset, offsets, key, txn_id, message, record_ts_ms).
 *
 * <p>Orders are Spark's: ascending, a missing value before any. Memory: one group's records at a
 * time, as narrow rows (no row images: a hash of a snapshot read's content).
 */
public final class TableJudge implements UDF5<scala.collection.Seq<Row>, Long, String, Boolean, Boolean, List<Row>> {
    private static final long serialVersionUID = 1L;

    static final String LAG_SPIKE = "lag_spike";
    static final String SNAPSHOT_RESTARTED = "snapshot_restarted";
    static final String SCHEMA_CHANGE_WITHOUT_DDL = "schema_change_without_ddl";
    static final String[] CODES = {LAG_SPIKE, SNAPSHOT_RESTARTED, SCHEMA_CHANGE_WITHOUT_DDL};
    static final int MAX_OFFSETS = 20;

    /** One record of the group, as checks/table_pass.py's struct gives it. */
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
        final String keyPayload;
        final Long content;
        final String schema;  // the value schema's hash (data events)
        final boolean ddl;  // a schema-change event about the table

        Rec(Row r) {
            topic = r.getString(0);
            partition = r.getInt(1);
            offset = r.getLong(2);
            recordTs = r.isNullAt(3) ? null : r.getLong(3);
            key = r.getString(4);
            txnId = r.getString(5);
            tsMs = r.isNullAt(6) ? null : r.getLong(6);
            lagMs = r.isNullAt(7) ? null : r.getLong(7);
            change = !r.isNullAt(8) && r.getBoolean(8);
            blocking = !r.isNullAt(9) && r.getBoolean(9);
            keyPayload = r.getString(10);
            content = r.isNullAt(11) ? null : r.getLong(11);
            schema = r.getString(12);
            ddl = !r.isNullAt(13) && r.getBoolean(13);
        }
    }

    private static final Comparator<String> TEXT = Comparator.nullsFirst(Comparator.naturalOrder());
    private static final Comparator<Long> NUMBER = Comparator.nullsFirst(Comparator.naturalOrder());
    /** (record time, topic, partition, offset): where a record is in the window. */
    private static final Comparator<Rec> AT = Comparator.comparing((Rec r) -> r.recordTs, NUMBER)
            .thenComparing(r -> r.topic, TEXT).thenComparingInt(r -> r.partition).thenComparingLong(r -> r.offset);
    private static final Comparator<Rec> AT_KEY = AT.thenComparing(r -> r.key, TEXT);
    /** A lag spike's order: (ts_ms, topic, partition, offset). */
    private static final Comparator<Rec> PROCESSED = Comparator.comparing((Rec r) -> r.tsMs, NUMBER)
            .thenComparing(r -> r.topic, TEXT).thenComparingInt(r -> r.partition).thenComparingLong(r -> r.offset);

    /** A run's first event: its order, then what else Spark's min(struct) compares. */
    private static final Comparator<Rec> RUN_FIRST = PROCESSED.thenComparing(r -> r.key, TEXT)
            .thenComparing(r -> r.txnId, TEXT).thenComparing(r -> r.recordTs, NUMBER);

    private static Row finding(String rule, Rec r, List<Long> offsets, String message) {
        return RowFactory.create(rule, r.topic, r.partition, r.offset, offsets, r.key, r.txnId, message, r.recordTs);
    }

    @Override
    public List<Row> call(scala.collection.Seq<Row> rows, Long threshold, String table, Boolean named, Boolean ddlRead) {
        List<Rec> recs = new ArrayList<>(rows.size());
        for (Row r : CollectionConverters.asJava(rows)) {
            recs.add(new Rec(r));
        }
        List<Row> out = new ArrayList<>();
        if (threshold != null) {
            lagSpikes(recs, threshold, out);
        }
        if (Boolean.TRUE.equals(named)) {
            snapshotRestarted(recs, table, out);
            if (Boolean.TRUE.equals(ddlRead)) {
                schemaChanges(recs, table, out);
            }
        }
        return out;
    }

    /** Runs of consecutive (by ts_ms) change events above the threshold: one finding per run, at its
     * first event, listing its records by (ts_ms, offset). */
    static void lagSpikes(List<Rec> recs, long threshold, List<Row> out) {
        List<Rec> lagged = new ArrayList<>();
        for (Rec r : recs) {
            if (r.lagMs != null) {
                lagged.add(r);
            }
        }
        lagged.sort(PROCESSED);
        int i = 0;
        while (i < lagged.size()) {
            if (lagged.get(i).lagMs <= threshold) {
                i++;
                continue;
            }
            int j = i;
            while (j < lagged.size() && lagged.get(j).lagMs > threshold) {
                j++;
            }
            List<Rec> run = new ArrayList<>(lagged.subList(i, j));
            Rec first = run.get(0);
            long peak = first.lagMs;
            for (Rec r : run) {
                if (RUN_FIRST.compare(r, first) < 0) {
                    first = r;
                }
                peak = Math.max(peak, r.lagMs);
            }
            run.sort(Comparator.comparing((Rec r) -> r.tsMs, NUMBER).thenComparingLong(r -> r.offset));
            List<Long> offsets = new ArrayList<>();
            for (Rec r : run.subList(0, Math.min(MAX_OFFSETS, run.size()))) {
                offsets.add(r.offset);
            }
            out.add(finding(LAG_SPIKE, first, offsets,
                    "lag spike: " + run.size() + " event(s) above " + threshold + " ms, peak " + peak + " ms"));
            i = j;
        }
    }

    /** The table's blocking snapshot read again after its changes were streaming: one finding, at the
     * first such read. A read repeating an earlier one of its key exactly (same content) is a copy:
     * the key pass's, not counted here. */
    static void snapshotRestarted(List<Rec> recs, String table, List<Row> out) {
        Rec since = null;
        for (Rec r : recs) {
            if (r.change && (since == null || AT.compare(r, since) < 0)) {
                since = r;
            }
        }
        if (since == null) {
            return;
        }
        Map<List<Object>, Rec> firstCopies = new HashMap<>();
        List<Rec> reads = new ArrayList<>();
        for (Rec r : recs) {
            if (!r.blocking) {
                continue;
            }
            if (r.keyPayload == null) {
                reads.add(r);
            } else {
                firstCopies.merge(Arrays.asList(r.topic, r.partition, r.keyPayload, r.content), r,
                        (a, b) -> b.offset < a.offset ? b : a);
            }
        }
        reads.addAll(firstCopies.values());
        Rec at = null;
        long n = 0;
        for (Rec r : reads) {
            if (AT.compare(r, since) > 0) {
                n++;
                if (at == null || AT_KEY.compare(r, at) < 0) {
                    at = r;
                }
            }
        }
        if (at != null) {
            out.add(RowFactory.create(SNAPSHOT_RESTARTED, at.topic, at.partition, at.offset, List.of(at.offset), at.key,
                    null, "snapshot of " + table + " started again: " + n + " snapshot event(s) after its changes were "
                    + "streaming (first change at " + since.topic + "[" + since.partition + "]@" + since.offset + ")",
                    at.recordTs));
        }
    }

    /** A value schema version of the table: its first record and its last record time. */
    private static final class Version {
        Rec first;
        Long lastTs;
    }

    /** Each change from one value schema version (in order of first appearance) to the next needs a DDL
     * event about the table timed from the old version's last record (its first, where the versions
     * interleave) to the new version's first: else one finding, at the new version's first record. */
    static void schemaChanges(List<Rec> recs, String table, List<Row> out) {
        Map<String, Version> byHash = new LinkedHashMap<>();
        List<Long> ddls = new ArrayList<>();
        for (Rec r : recs) {
            if (r.ddl) {
                if (r.recordTs != null) {
                    ddls.add(r.recordTs);
                }
                continue;
            }
            if (r.schema == null) {
                continue;
            }
            Version v = byHash.computeIfAbsent(r.schema, h -> new Version());
            if (v.first == null || AT_KEY.compare(r, v.first) < 0) {
                v.first = r;
            }
            if (r.recordTs != null && (v.lastTs == null || r.recordTs > v.lastTs)) {
                v.lastTs = r.recordTs;
            }
        }
        List<Version> versions = new ArrayList<>(byHash.values());
        if (versions.size() < 2) {
            return;
        }
        versions.sort(Comparator.comparing((Version v) -> v.first, AT_KEY).thenComparing(v -> v.lastTs, NUMBER));
        int n = versions.size();
        for (int step = 0; step < n - 1; step++) {
            Version old = versions.get(step);
            Rec at = versions.get(step + 1).first;
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
                out.add(RowFactory.create(SCHEMA_CHANGE_WITHOUT_DDL, at.topic, at.partition, at.offset, List.of(at.offset),
                        at.key, null, "value schema of " + table + " changed (version " + (step + 2) + " of " + n
                        + ") with no DDL event for it on the schema-change topic between the last record of the old "
                        + "version and this one", at.recordTs));
            }
        }
    }

    public static void main(String[] args) {
        for (String c : CODES) {
            System.out.println(c);
        }
    }
}
