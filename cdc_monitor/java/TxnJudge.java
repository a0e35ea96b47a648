package cdcmonitor;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF3;

import scala.jdk.javaapi.CollectionConverters;

/**
 * The transaction pass's data side: one transaction's data events (and whether any BEGIN/END names
 * it) judged (checks/transactions.py).
 *
 * <p>One judge, {@link Walk}, fed a (server, transaction key)'s records in {@link #ORDER} (markers
 * first, then total_order, topic, partition, offset: Spark's order of a topic's events) two ways: as a sorted stream on a
 * classic session ({@link #stream}, through {@link Passes}: memory does not grow with the transaction's
 * events), or, over Spark Connect, as this class's Java UDF over the group's collected records (held as
 * one array, sorted here). A record is a {@link Rec} (checks/transactions.py's fields, in that order);
 * the span of record times the server's transaction topic covers (lo, hi; null without one).
 *
 * <p>What needs more than one record is read from that one order, with no SQL window: a data event is
 * a copy of an earlier one (the same topic, key and content) when an event of its run (the same
 * total_order and topic, read in partition and offset order: the content holds the total_order, so an
 * event's copies are in its run, the first by partition and offset first) had its {@code same} (its key
 * payload and content hashed). A run is one event and its copies, unless the producer repeated a
 * total_order; the walk keeps the run's hashes, at most {@link #RUN_HASHES} (past that, a copy is one
 * that follows its original). Its rank in its collection is how many of its collection's data events,
 * copies counted once, came up to it in total_order. Output rows: one summary (the data events seen, copies
 * counted once; seen per collection; the first event whose total_order or data_collection_order breaks
 * 1..n with how many break), and one row per orphan event (a data event, copies included, of a
 * transaction no marker names, inside the span), each named with its place and record time.
 */
public final class TxnJudge implements UDF3<scala.collection.Seq<Row>, Long, Long, List<Row>> {
    private static final long serialVersionUID = 1L;

    /** One record of the group, as checks/transactions.py's records give it. */
    static final class Rec {
        final boolean marker;
        final String topic;
        final int partition;
        final long offset;
        final String table;
        final Long totalOrder;
        final Long collectionOrder;
        final Long recordTs;
        final String key;
        final String txnId;
        final Long same;

        /** The record at fields {@code b..} of {@code r}. */
        Rec(Row r, int b) {
            marker = r.getBoolean(b);
            topic = r.getString(b + 1);
            partition = r.getInt(b + 2);
            offset = r.getLong(b + 3);
            table = r.getString(b + 4);
            totalOrder = r.isNullAt(b + 5) ? null : r.getLong(b + 5);
            collectionOrder = r.isNullAt(b + 6) ? null : r.getLong(b + 6);
            recordTs = r.isNullAt(b + 7) ? null : r.getLong(b + 7);
            key = r.getString(b + 8);
            txnId = r.getString(b + 9);
            same = r.isNullAt(b + 10) ? null : r.getLong(b + 10);
        }
    }

    /** The Rec's fields, then the group's parameters (lo, hi): where they start in a stream's row. */
    static final int FIELDS = 11;

    private static final Comparator<String> TEXT = Comparator.nullsFirst(Comparator.naturalOrder());
    private static final Comparator<Long> NUMBER = Comparator.nullsFirst(Comparator.naturalOrder());
    /** Spark's (topic, partition, offset) order. */
    private static final Comparator<Rec> PLACE = Comparator.comparing((Rec r) -> r.topic, TEXT)
            .thenComparingInt(r -> r.partition).thenComparingLong(r -> r.offset);
    /** The pass's order: markers first, then (total_order, topic, partition, offset). */
    static final Comparator<Rec> ORDER = Comparator.comparing((Rec r) -> !r.marker)
            .thenComparing(r -> r.totalOrder, NUMBER).thenComparing(PLACE);
    /** The most content hashes a run keeps (see the class): a bound on memory whatever the producer. */
    static final int RUN_HASHES = 10_000;
    private static final Comparator<Rec> BREAK = Comparator
            .comparingLong((Rec r) -> r.totalOrder == null ? 0L : r.totalOrder).thenComparing(PLACE);

    @Override
    public List<Row> call(scala.collection.Seq<Row> rows, Long lo, Long hi) {
        return Passes.walkAll(rows, r -> new Rec(r, 0), ORDER, new Walk(lo, hi, null));
    }

    /** The transaction pass as a stream (Passes): rows (server, txn_key, a Rec's fields, lo, hi), each
     * transaction's in {@link #ORDER}; rows prefixed by the server and transaction key. */
    public static org.apache.spark.sql.Dataset<Row> stream(org.apache.spark.sql.Dataset<Row> records,
            List<String> group, List<String> order, String outDdl) {
        int p = 2 + FIELDS;
        return Passes.walk(records, group, order, (key, first) -> {
            Walk walk = new Walk(first.isNullAt(p) ? null : first.getLong(p),
                    first.isNullAt(p + 1) ? null : first.getLong(p + 1), new Object[] {key.get(0), key.get(1)});
            return Passes.reading(walk, row -> new Rec(row, 2));
        }, outDdl);
    }

    /** One transaction's records walked in {@link #ORDER}: counts (in total and per collection), the
     * first break and how many, whether a marker names it; orphans as they come. It holds the previous
     * data event, its run's content hashes (bounded) and a count per collection. */
    static final class Walk implements Passes.Walk<Rec> {
        private final Long lo;
        private final Long hi;
        private final Object[] prefix;  // the stream's (server, txn_key); null: a UDF's row
        private boolean named;
        private Rec previous;  // the previous data event
        private final java.util.Set<Long> run = new java.util.HashSet<>();  // the current run's content hashes
        private long seen;
        private final Map<String, Long> counts = new TreeMap<>(TEXT);
        private Rec first;  // the first break
        private boolean firstTotal;  // whether it breaks total_order
        private long breaks;

        Walk(Long lo, Long hi, Object[] prefix) {
            this.lo = lo;
            this.hi = hi;
            this.prefix = prefix;
        }

        private Row row(Object seen, Object counts, Object brk, Object breaks, Object orphan) {
            Object[] f = {seen, counts, brk, breaks, orphan};
            if (prefix == null) {
                return RowFactory.create(f);
            }
            return RowFactory.create(prefix[0], prefix[1], seen, counts, brk, breaks, orphan);
        }

        @Override
        public void accept(Rec r, List<Row> out) {
            if (r.marker) {
                named = true;
                return;
            }
            if (!named && lo != null && hi != null && r.recordTs != null && r.recordTs >= lo && r.recordTs <= hi) {
                out.add(row(null, null, null, null,
                        RowFactory.create(r.topic, r.partition, r.offset, r.key, r.txnId, r.table, r.recordTs)));
            }
            if (previous == null || !Objects.equals(r.totalOrder, previous.totalOrder)
                    || !Objects.equals(r.topic, previous.topic)) {
                run.clear();  // a new run
            }
            boolean copy = r.same != null && (run.contains(r.same)
                    || (previous != null && r.same.equals(previous.same) && run.size() >= RUN_HASHES));
            if (!copy && r.same != null && run.size() < RUN_HASHES) {
                run.add(r.same);
            }
            previous = r;
            if (copy) {
                return;
            }
            seen++;
            long rank = counts.merge(r.table, 1L, Long::sum);
            boolean total = r.totalOrder != null && r.totalOrder != seen;
            boolean collection = r.collectionOrder != null && r.collectionOrder != rank;
            if (total || collection) {
                breaks++;
                if (first == null || BREAK.compare(r, first) < 0) {
                    first = r;
                    firstTotal = total;
                }
            }
        }

        @Override
        public void end(List<Row> out) {
            if (seen == 0) {
                out.add(row(null, null, null, null, null));
                return;
            }
            Row brk = first == null ? null : RowFactory.create(first.topic, first.partition, first.offset, first.key,
                    first.totalOrder, first.collectionOrder, firstTotal, first.table, first.txnId, first.recordTs);
            out.add(row(seen, counts, brk, breaks, null));
        }
    }
}
