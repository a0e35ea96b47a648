package cdcmonitor;

import java.io.Serializable;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.function.Function;

import org.apache.spark.api.java.function.FlatMapGroupsFunction;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

import scala.jdk.javaapi.CollectionConverters;

/**
 * The passes' groups read as streams: each group's records, sorted by Spark (an external sort: it
 * spills), handed one at a time to a fresh {@link Walk} of the pass's judge, which holds only what its
 * rules need. Spark's public Dataset API ({@code groupBy(...).as(...).flatMapSortedGroups}); called
 * from checks/passes.py through the session's JVM on a classic session. A Spark Connect session feeds
 * the same walks from the judges' UDFs (each sorts its collected group in the same order), so the rules
 * are judged by one implementation whichever way a group arrives.
 *
 * <p>A pass's input rows: its group columns, then its record's fields (the judge's {@code Rec} reads
 * them from the first field after the group columns), then the group's parameters if it has any (the
 * same on every row of a group). Output rows: the judge's findings, each prefixed by the group
 * columns the pass's SQL keeps (see each judge's {@code stream}).
 */
public final class Passes {
    private Passes() {
    }

    /**
     * One group's judge, fed its records (of type {@code R}) in the pass's order. Two feeders, one walk:
     *
     * <ul>
     *   <li>scan's ({@link #walk}, the judges' UDFs): a fresh walk per group, fed the window's records
     *       in order, then {@link #end}: the group has ended;</li>
     *   <li>watch's (the stateful operator, {@link Carry}: a stream that never ends): a walk per group
     *       and micro-batch, fed in the pass's order what the group's state keeps of its earlier records
     *       (their facts as compact bytes, {@link Codec}: what the walk's rules read of them) with the
     *       batch's new records; {@link #end} means the batch has ended: what the group's records so far
     *       show of its whole. Only a finding pointing at a new record counts (one pointing at an earlier
     *       record was counted in that record's batch). What becomes final only with time (an END whose
     *       events are on their way, an orphan candidate: {@link ServerContext}) is the operator's to
     *       decide, not the walk's.</li>
     * </ul>
     */
    public interface Walk<R> {
        /** The next record, its findings added to {@code out}. */
        void accept(R record, List<Row> out);

        /** The group has ended (a stream: the batch has): what only its whole can show, added to {@code out}. */
        void end(List<Row> out);
    }

    /** A fresh walk for a group, from its key (the group columns) and its first row, reading the stream's rows. */
    public interface Start extends Serializable {
        Walk<Row> start(Row key, Row first);
    }

    /** {@code walk} fed a stream's rows, each read as its judge's record by {@code record}. */
    static <R> Walk<Row> reading(Walk<R> walk, Function<Row, R> record) {
        return new Walk<>() {
            @Override
            public void accept(Row row, List<Row> out) {
                walk.accept(record.apply(row), out);
            }

            @Override
            public void end(List<Row> out) {
                walk.end(out);
            }
        };
    }

    /** A judge's UDF (Spark Connect's feeding): the group's collected {@code rows}, each read by
     * {@code record}, sorted in the pass's {@code order} and walked by {@code walk}; its findings. */
    static <R> List<Row> walkAll(scala.collection.Seq<Row> rows, Function<Row, R> record, Comparator<R> order,
            Walk<R> walk) {
        List<R> records = new ArrayList<>(rows.size());
        for (Row r : CollectionConverters.asJava(rows)) {
            records.add(record.apply(r));
        }
        records.sort(order);
        List<Row> out = new ArrayList<>();
        for (R r : records) {
            walk.accept(r, out);
        }
        walk.end(out);
        return out;
    }

    /** {@code records} grouped by {@code group} (column names), each group's rows sorted by
     * {@code order} (SQL expressions, ascending, a missing value first; or {@code "x DESC"}) and walked by a walk {@code start} makes: the findings, rows of
     * {@code out} (a struct type as DDL). */
    static Dataset<Row> walk(Dataset<Row> records, List<String> group, List<String> order, Start start, String out) {
        StructType schema = records.schema();
        StructType keySchema = new StructType();
        Column[] keys = new Column[group.size()];
        for (int i = 0; i < group.size(); i++) {
            keySchema = keySchema.add(schema.apply(group.get(i)));
            keys[i] = functions.col(group.get(i));
        }
        Column[] sort = new Column[order.size()];
        for (int i = 0; i < order.size(); i++) {
            String o = order.get(i).strip();
            // (functions.expr would read "x DESC" as x named DESC)
            sort[i] = o.toUpperCase(java.util.Locale.ROOT).endsWith(" DESC")
                    ? functions.expr(o.substring(0, o.length() - 5)).desc() : functions.expr(o);
        }
        FlatMapGroupsFunction<Row, Row, Row> judge = (key, rows) -> new Findings(start, key, rows);
        return records.groupBy(keys).as(Encoders.row(keySchema), Encoders.row(schema))
                .flatMapSortedGroups(sort, judge, Encoders.row((StructType) DataType.fromDDL(out)));
    }

    /** A group's findings, produced as they are read: the records are pulled only as far as the next
     * finding, so neither the group nor its findings are ever held whole. */
    private static final class Findings implements Iterator<Row> {
        private final Start start;
        private final Row key;
        private final Iterator<Row> rows;
        private final ArrayDeque<Row> ready = new ArrayDeque<>();
        private final List<Row> found = new ArrayList<>();
        private Walk<Row> walk;
        private boolean ended;

        Findings(Start start, Row key, Iterator<Row> rows) {
            this.start = start;
            this.key = key;
            this.rows = rows;
        }

        @Override
        public boolean hasNext() {
            while (ready.isEmpty() && !ended) {
                if (rows.hasNext()) {
                    Row row = rows.next();
                    if (walk == null) {
                        walk = start.start(key, row);
                    }
                    walk.accept(row, found);
                } else {
                    if (walk != null) {
                        walk.end(found);
                    }
                    ended = true;
                }
                ready.addAll(found);
                found.clear();
            }
            return !ready.isEmpty();
        }

        @Override
        public Row next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            return scala(ready.poll());
        }
    }

    /** A judge's row as the stream's encoder takes it: Java lists and maps (the UDFs' return types) as
     * Scala's, nested rows alike. */
    static Row scala(Row row) {
        Object[] values = new Object[row.size()];
        for (int i = 0; i < values.length; i++) {
            values[i] = scalaValue(row.get(i));
        }
        return RowFactory.create(values);
    }

    private static Object scalaValue(Object v) {
        if (v instanceof Row r) {
            return scala(r);
        }
        if (v instanceof List<?> list) {
            List<Object> out = new ArrayList<>(list.size());
            for (Object o : list) {
                out.add(scalaValue(o));
            }
            return CollectionConverters.asScala(out).toSeq();
        }
        if (v instanceof Map<?, ?> map) {
            Map<Object, Object> out = new LinkedHashMap<>();
            for (Map.Entry<?, ?> e : map.entrySet()) {
                out.put(e.getKey(), scalaValue(e.getValue()));
            }
            return scala.collection.immutable.Map.from(CollectionConverters.asScala(out));
        }
        return v;
    }
}
