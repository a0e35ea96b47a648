package cdcmonitor;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF2;

import scala.jdk.javaapi.CollectionConverters;

/**
 * The key pass: every rule of the ordering check judged over one key's records (checks/ordering.py).
 * The rules are declared in checks/ordering.py and named here by the same codes ({@link #CODES};
 * tests/unit/test_decoder_rules.py holds both sides equal).
 *
 * <p>One judge, {@link Walk}, fed a (topic, key payload)'s records in {@link #ORDER} (partition,
 * offset) two ways: as a sorted stream on a classic session ({@link #stream}, through {@link Passes}:
 * memory does not grow with the key's records), or, over Spark Connect, as this class's Java UDF over
 * the key's collected records (held as one array, sorted here). A record is a {@link Rec} (the struct
 * checks/ordering.py builds, fields in that order), its copies already found by the pass's SQL (a
 * window per key, partition and content: {@code copy_of}); whether the group has a key (keyless data
 * events of a topic are one group: only copies are judged among them). Output: the findings, each
 * (rule, partition, offset, offsets, key, txn_id, message, server, table, record_ts_ms).
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
        final String processed;
        final boolean fromStart;
        final String key;
        final String txnId;
        final String server;
        final String table;

        final Long copyOf;  // a copy of an earlier data event of the key's partition: that event's offset
        final String copyOfProcessed;  // and its processing time

        /** The record at fields {@code b..} of {@code r}. */
        Rec(Row r, int b) {
            this(r.getInt(b), r.getLong(b + 1), r.isNullAt(b + 2) ? null : r.getLong(b + 2),
                    !r.isNullAt(b + 3) && r.getBoolean(b + 3), r.getString(b + 4),
                    r.isNullAt(b + 5) ? null : r.getBoolean(b + 5),
                    r.isNullAt(b + 6) ? null : CollectionConverters.asJava(r.<Object>getSeq(b + 6)), r.getString(b + 7),
                    !r.isNullAt(b + 8) && r.getBoolean(b + 8), r.getString(b + 9), r.getString(b + 10),
                    r.getString(b + 11), r.getString(b + 12), r.isNullAt(b + 13) ? null : r.getLong(b + 13),
                    r.getString(b + 14));
        }

        /** A record from its fields (watch's operator feeds them from a record's facts: KeyHistory). */
        Rec(int partition, long offset, Long recordTs, boolean tombstone, String op, Boolean snapshot,
                List<Object> position, String processed, boolean fromStart, String key, String txnId, String server,
                String table, Long copyOf, String copyOfProcessed) {
            this.partition = partition;
            this.offset = offset;
            this.recordTs = recordTs;
            this.tombstone = tombstone;
            this.op = op;
            this.snapshot = snapshot;
            this.position = position;
            this.processed = processed;
            this.fromStart = fromStart;
            this.key = key;
            this.txnId = txnId;
            this.server = server;
            this.table = table;
            this.copyOf = copyOf;
            this.copyOfProcessed = copyOfProcessed;
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
        return Passes.walkAll(rows, r -> new Rec(r, 0), ORDER, new Walk(Boolean.TRUE.equals(keyed), null));
    }

    /** The pass's order within a key: partition, offset (checks/ordering.py sorts the stream alike). */
    static final Comparator<Rec> ORDER = Comparator.comparingInt((Rec r) -> r.partition).thenComparingLong(r -> r.offset);

    /** The key pass as a stream (Passes): rows (topic, key_payload, then a Rec's fields), each key's in
     * {@link #ORDER}; findings prefixed by the topic. */
    public static org.apache.spark.sql.Dataset<Row> stream(org.apache.spark.sql.Dataset<Row> records,
            List<String> group, List<String> order, String outDdl) {
        return Passes.walk(records, group, order, (key, first) -> {
            Walk walk = new Walk(!key.isNullAt(1), key.getString(0));
            return Passes.reading(walk, row -> new Rec(row, 2));
        }, outDdl);
    }

    /** One partition's state for a key: what its first records deferred, where it starts. */
    private static final class Part {
        final Rec first;
        final List<Long> offsets = new ArrayList<>();
        final List<Row> pending = new ArrayList<>();  // first-record findings, judged only if the key is in one partition
        String prevAnyOp;  // the previous record's op ('~' for a tombstone), null for none (or no op)
        boolean any;
        Rec prev;  // the previous data event that is no copy (c, u, d, r)
        int n;

        Part(Rec first) {
            this.first = first;
        }
    }

    /** One key's records walked in {@link #ORDER}: what each rule needs, no more (the previous record
     * per partition; per partition seen, its first record, first offsets and deferred findings). */
    static final class Walk implements Passes.Walk<Rec> {
        private final boolean keyed;
        private final String topic;  // the stream's prefix; null: a UDF's finding, no prefix
        private final List<Part> parts = new ArrayList<>();
        private Part part;
        private Rec home;  // the key's first record by record time: its partition is the key's home

        Walk(boolean keyed, String topic) {
            this.keyed = keyed;
            this.topic = topic;
        }

        private Row finding(String rule, Rec r, List<Long> offsets, String message) {
            Row f = KeyJudge.finding(rule, r, offsets, message);
            if (topic == null) {
                return f;
            }
            return RowFactory.create(topic, f.get(0), f.get(1), f.get(2), f.get(3), f.get(4), f.get(5), f.get(6),
                    f.get(7), f.get(8), f.get(9));
        }

        private Row finding(String rule, Rec r, String message) {
            return finding(rule, r, List.of(r.offset), message);
        }

        @Override
        public void accept(Rec r, List<Row> out) {
            if (home == null || HOME.compare(r, home) < 0) {
                home = r;
            }
            if (part == null || part.first.partition != r.partition) {
                part = new Part(r);
                parts.add(part);
            }
            Part p = part;
            if (p.offsets.size() < MAX_OFFSETS) {
                p.offsets.add(r.offset);
            }
            String before = p.any ? p.prevAnyOp : null;
            p.any = true;
            p.prevAnyOp = r.data() ? r.op : "~";
            if (r.data() && r.copyOf != null) {
                out.add(copy(r));
                return;
            }
            if (!keyed) {
                return;
            }
            if (r.tombstone) {
                if (before == null) {
                    if (r.fromStart) {
                        p.pending.add(finding(TOMBSTONE_WITHOUT_DELETE, r, "tombstone is the key's first record"));
                    }
                } else if (!before.equals("d")) {
                    out.add(finding(TOMBSTONE_WITHOUT_DELETE, r, "tombstone not preceded by a delete"));
                }
                return;
            }
            if (r.op == null || !(r.op.equals("c") || r.op.equals("u") || r.op.equals("d") || r.op.equals("r"))) {
                return;
            }
            p.n++;
            boolean updateOrDelete = r.op.equals("u") || r.op.equals("d");
            Rec prev = p.prev;
            if (prev != null && r.position != null && prev.position != null && Boolean.FALSE.equals(r.snapshot)
                    && Boolean.FALSE.equals(prev.snapshot) && comparePositions(r.position, prev.position) < 0) {
                out.add(finding(POSITION_REGRESSION, r, "source position " + text(r.position)
                        + " is behind the previous " + text(prev.position)));
            }
            if (prev != null && updateOrDelete && "d".equals(prev.op)) {
                out.add(finding(EVENT_AFTER_DELETE, r, "op " + r.op + " after the key was deleted"));
            }
            if (p.n == 1 && updateOrDelete && r.fromStart) {
                p.pending.add(finding(MISSING_CREATE, r, "op " + r.op + " of a key never created in this partition"));
            }
            p.prev = r;
        }

        @Override
        public void end(List<Row> out) {
            end(out, out);
        }

        /** {@link #end}, the findings judged only where a partition was read from its start (a first
         * record's: missing_create, a first tombstone) added to {@code first} instead (watch's feeder
         * knows that only on the driver). */
        void end(List<Row> out, List<Row> first) {
            boolean multi = keyed && parts.size() > 1;
            for (Part p : parts) {
                if (!multi) {
                    first.addAll(p.pending);
                } else if (p.first.partition != home.partition) {
                    out.add(finding(KEY_IN_MULTIPLE_PARTITIONS, p.first, p.offsets,
                            "key also in partition " + home.partition + " of this topic"));
                }
            }
        }

        /** A copy of an earlier data event: the same record again, or the same change processed again. */
        private Row copy(Rec r) {
            if (Objects.equals(r.copyOfProcessed, r.processed)) {
                return finding(DUPLICATE, r, "the record at offset " + r.copyOf
                        + " again: same op, row, source position and processing time");
            }
            return finding(REPLAYED_AFTER_RESTART, r, "the change event at offset " + r.copyOf
                    + " sent again (same op, row and source position), processed again at "
                    + (r.processed == null ? "?" : r.processed) + " (first at "
                    + (r.copyOfProcessed == null ? "?" : r.copyOfProcessed)
                    + "): the connector resumed from an earlier committed offset");
        }
    }

    /** Smallest record time first (a missing one before any), then partition and offset. */
    private static final Comparator<Rec> HOME = Comparator
            .comparing((Rec r) -> r.recordTs, Comparator.nullsFirst(Comparator.naturalOrder()))
            .thenComparingInt(r -> r.partition).thenComparingLong(r -> r.offset);

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
