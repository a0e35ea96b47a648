package cdcmonitor;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF3;

import scala.jdk.javaapi.CollectionConverters;

/**
 * The transaction pass's data side: one transaction's data events (and whether any BEGIN/END names
 * it) judged in one call, a Java UDF over the records one aggregate per (server, transaction key)
 * collects (checks/transactions.py). Spark's public UDF API.
 *
 * <p>Input: the group's records, each a {@link Rec} (checks/transactions.py's struct, fields in that
 * order), in any order; the span of record times the server's transaction topic covers (lo, hi;
 * null without one). Output: one struct: the data events seen (copies of one event counted once:
 * the same topic, key and content), seen per collection, the first event whose total_order or
 * data_collection_order breaks 1..n with how many break, and the orphan events (a data event of a
 * transaction no marker names, inside the span); each event named with its place and record time.
 */
public final class TxnJudge implements UDF3<scala.collection.Seq<Row>, Long, Long, Row> {
    private static final long serialVersionUID = 1L;

    /** One record of the group, as checks/transactions.py's struct gives it. */
    static final class Rec {
        final boolean marker;
        final String topic;
        final int partition;
        final long offset;
        final String keyPayload;
        final Long content;
        final String table;
        final Long totalOrder;
        final Long collectionOrder;
        final Long recordTs;
        final String key;
        final String txnId;

        Rec(Row r) {
            marker = r.getBoolean(0);
            topic = r.getString(1);
            partition = r.getInt(2);
            offset = r.getLong(3);
            keyPayload = r.getString(4);
            content = r.isNullAt(5) ? null : r.getLong(5);
            table = r.getString(6);
            totalOrder = r.isNullAt(7) ? null : r.getLong(7);
            collectionOrder = r.isNullAt(8) ? null : r.getLong(8);
            recordTs = r.isNullAt(9) ? null : r.getLong(9);
            key = r.getString(10);
            txnId = r.getString(11);
        }
    }

    private static final Comparator<String> TEXT = Comparator.nullsFirst(Comparator.naturalOrder());
    private static final Comparator<Long> NUMBER = Comparator.nullsFirst(Comparator.naturalOrder());
    /** Spark's (topic, partition, offset) order. */
    private static final Comparator<Rec> PLACE = Comparator.comparing((Rec r) -> r.topic, TEXT)
            .thenComparingInt(r -> r.partition).thenComparingLong(r -> r.offset);

    @Override
    public Row call(scala.collection.Seq<Row> rows, Long lo, Long hi) {
        List<Rec> data = new ArrayList<>(rows.size());
        boolean named = false;
        for (Row r : CollectionConverters.asJava(rows)) {
            Rec rec = new Rec(r);
            if (rec.marker) {
                named = true;
            } else {
                data.add(rec);
            }
        }
        data.sort(PLACE);
        List<Row> orphans = new ArrayList<>();
        if (!named && lo != null && hi != null) {
            for (Rec r : data) {
                if (r.recordTs != null && r.recordTs >= lo && r.recordTs <= hi) {
                    orphans.add(RowFactory.create(r.topic, r.partition, r.offset, r.key, r.txnId, r.table, r.recordTs));
                }
            }
        }
        if (data.isEmpty()) {
            return RowFactory.create(null, null, null, null, orphans);
        }
        // copies of one event (same topic, key and content) count once: the first by partition and offset
        List<Rec> seen = new ArrayList<>(data.size());
        Set<List<Object>> copies = new HashSet<>();
        for (Rec r : data) {
            if (copies.add(Arrays.asList(r.topic, r.keyPayload, r.content))) {
                seen.add(r);
            }
        }
        Map<Rec, Boolean> totalBreak = new HashMap<>();
        Set<Rec> broken = new HashSet<>();
        seen.sort(Comparator.comparing((Rec r) -> r.totalOrder, NUMBER).thenComparing(PLACE));
        for (int i = 0; i < seen.size(); i++) {
            Rec r = seen.get(i);
            boolean b = r.totalOrder != null && r.totalOrder != i + 1;
            totalBreak.put(r, b);
            if (b) {
                broken.add(r);
            }
        }
        Map<String, List<Rec>> byTable = new TreeMap<>(TEXT);
        for (Rec r : seen) {
            byTable.computeIfAbsent(r.table, t -> new ArrayList<>()).add(r);
        }
        Map<String, Long> counts = new TreeMap<>(TEXT);
        for (Map.Entry<String, List<Rec>> e : byTable.entrySet()) {
            List<Rec> recs = e.getValue();
            counts.put(e.getKey(), (long) recs.size());
            recs.sort(Comparator.comparing((Rec r) -> r.collectionOrder, NUMBER).thenComparing(PLACE));
            for (int i = 0; i < recs.size(); i++) {
                Rec r = recs.get(i);
                if (r.collectionOrder != null && r.collectionOrder != i + 1) {
                    broken.add(r);
                }
            }
        }
        Rec first = null;
        Comparator<Rec> brkOrder = Comparator.comparingLong((Rec r) -> r.totalOrder == null ? 0L : r.totalOrder)
                .thenComparing(PLACE);
        for (Rec r : broken) {
            if (first == null || brkOrder.compare(r, first) < 0) {
                first = r;
            }
        }
        Row brk = first == null ? null : RowFactory.create(first.topic, first.partition, first.offset, first.key,
                first.totalOrder, first.collectionOrder, totalBreak.get(first), first.table, first.txnId, first.recordTs);
        return RowFactory.create((long) seen.size(), counts, brk, (long) broken.size(), orphans);
    }

}
