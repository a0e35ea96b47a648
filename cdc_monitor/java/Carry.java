package cdcmonitor;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.GroupState;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

import scala.jdk.javaapi.CollectionConverters;

/**
 * watch's one stateful operator: the whole context a micro-batch is judged with, carried on the JVM
 * ({@code flatMapGroupsWithState}, no Python worker). {@code watch/carry.py} composes its input and
 * describes the groups; this class holds them:
 *
 * <ul>
 *   <li>{@code K} topic, key: the key's last records per partition ({@link KeyHistory});</li>
 *   <li>{@code P} topic, partition: records with no key history, emitted {@code new}, no state;</li>
 *   <li>{@code S} server: open and pending transactions, orphan candidates, finalized ids and the
 *       data partitions' progress ({@link ServerContext});</li>
 *   <li>{@code L} server, table: the newest change event with a lag ({@link #tail}).</li>
 * </ul>
 *
 * <p>Input rows: {@code ctx}, the record ({@link #RECORD}), then the server and table groups' fields
 * ({@link #FIELDS}; null for K and P rows). Output rows: the record and its role. One state schema
 * for every group ({@link #STATE}), its fields used by one kind each, stamped with {@link #VERSION}:
 * a state of another version is refused (a checkpoint of another cdc-monitor). The vocabulary (roles,
 * group kinds, the separator) is {@code watch/carry.py}'s; {@code main("vocabulary")} prints it for
 * the test that holds the two equal.
 */
public final class Carry implements FlatMapGroupsWithStateFunction<String, Row, Row, Row> {
    private static final long serialVersionUID = 1L;

    /** The state's format: 1, every group on the JVM in one operator (before: a Python operator's JSON). */
    public static final int VERSION = 1;

    public static final String NEW = "new", CARRIED = "carried", CANDIDATE = "candidate", TAIL = "tail",
            FINAL = "final", EVICTED = "evicted", PENDING = "pending";
    public static final String KEY = "K", PARTITION = "P", SERVER = "S", LAG = "L";
    public static final String SEP = "\u001f";
    /** skind: a transaction marker (BEGIN or END) or a data event naming a transaction. */
    public static final String MARKER = "marker", DATA = "data";

    /** A record as carried (the Kafka source's fields, timestamp in microseconds, headers as JSON). */
    public static final StructType RECORD = new StructType()
            .add("topic", DataTypes.StringType)
            .add("partition", DataTypes.IntegerType)
            .add("offset", DataTypes.LongType)
            .add("key", DataTypes.BinaryType)
            .add("value", DataTypes.BinaryType)
            .add("record_us", DataTypes.LongType)
            .add("timestampType", DataTypes.IntegerType)
            .add("headers_json", DataTypes.StringType);
    /** An END's counts per collection (the decoder's marker_collections). */
    public static final StructType COLLECTION = new StructType()
            .add("data_collection", DataTypes.StringType)
            .add("event_count", DataTypes.LongType);
    /** The server and table groups' fields of a fed row (record_ts_ms: the L group's order, the event's ts_ms). */
    public static final StructType FIELDS = new StructType()
            .add("skind", DataTypes.StringType)
            .add("status", DataTypes.StringType)
            .add("txn", DataTypes.StringType)
            .add("record_ts_ms", DataTypes.LongType)
            .add("tbl", DataTypes.StringType)
            .add("event_count", DataTypes.LongType)
            .add("collections", DataTypes.createArrayType(COLLECTION));
    public static final StructType INPUT = concat(new StructType().add("ctx", DataTypes.StringType), RECORD, FIELDS);
    public static final StructType OUTPUT = concat(RECORD, new StructType().add("role", DataTypes.StringType));
    /** A held S row: the record, its fields, the wall time (ms) it was first seen. */
    public static final StructType HELD = concat(RECORD, FIELDS, new StructType().add("seen_ms", DataTypes.LongType));
    public static final StructType PROGRESS = new StructType()
            .add("topic", DataTypes.StringType)
            .add("partition", DataTypes.IntegerType)
            .add("tbl", DataTypes.StringType)
            .add("ts", DataTypes.LongType);
    /** A held L row: the record and its order (the event's ts_ms). */
    public static final StructType TAIL_ROW = concat(RECORD, new StructType().add("order_ts", DataTypes.LongType));
    public static final StructType STATE = new StructType()
            .add("v", DataTypes.IntegerType)
            .add("h", DataTypes.createArrayType(RECORD))               // K
            .add("rows", DataTypes.createArrayType(HELD))              // S
            .add("final", DataTypes.createArrayType(DataTypes.StringType))
            .add("horizon", DataTypes.LongType)
            .add("open", DataTypes.createArrayType(DataTypes.StringType))
            .add("progress", DataTypes.createArrayType(PROGRESS))
            .add("tail", TAIL_ROW);                                    // L
    static final int N = RECORD.size();
    // a held S row's fields (the fed row's, less ctx)
    static final int SKIND = N, STATUS = N + 1, TXN = N + 2, TS = N + 3, TBL = N + 4, COUNT = N + 5, COLLS = N + 6,
            SEEN = N + 7;
    // the state's fields
    static final int S_H = 1, S_ROWS = 2, S_FINAL = 3, S_HORIZON = 4, S_OPEN = 5, S_PROGRESS = 6, S_TAIL = 7;

    final int keep;
    final long ttlMs;
    final long awaitMs;
    final int finalMemory;
    final ArrayList<String> transactionServers;
    final HashMap<String, Integer> topicPartitions;

    /**
     * @param keep records kept per key and partition
     * @param ttlMs processing time after which an idle key's history is dropped
     * @param awaitMs wall time a held transaction or orphan candidate waits at most
     * @param finalMemory ids of finalized transactions remembered per server
     * @param transactionServers servers whose transaction topic the stream reads
     * @param topicPartitions partitions of each data topic the stream reads
     */
    public Carry(int keep, long ttlMs, long awaitMs, int finalMemory, List<String> transactionServers,
                 Map<String, Integer> topicPartitions) {
        this.keep = keep;
        this.ttlMs = ttlMs;
        this.awaitMs = awaitMs;
        this.finalMemory = finalMemory;
        this.transactionServers = new ArrayList<>(transactionServers);
        this.topicPartitions = new HashMap<>(topicPartitions);
    }

    static StructType concat(StructType... parts) {
        StructType out = new StructType();
        for (StructType p : parts) {
            for (var f : p.fields()) {
                out = out.add(f);
            }
        }
        return out;
    }

    /** The operator over {@code input} ({@link #INPUT}'s columns), for Python's py4j. */
    public static Dataset<Row> apply(Dataset<Row> input, Carry settings) {
        return input.groupByKey((MapFunction<Row, String>) r -> r.getString(0), Encoders.STRING())
                .flatMapGroupsWithState(settings, OutputMode.Append(), Encoders.row(STATE), Encoders.row(OUTPUT),
                        GroupStateTimeout.ProcessingTimeTimeout());
    }

    /** {@code held}, a group's state, if this version reads it (null: none); else a fix-it error. */
    public static Row checked(Row held) {
        if (held != null && (held.isNullAt(0) || held.getInt(0) != VERSION)) {
            throw new IllegalStateException("this checkpoint's watch state has format version "
                    + (held.isNullAt(0) ? "none" : held.getInt(0)) + ", this cdc-monitor reads version " + VERSION
                    + ": start watch with a new --checkpoint folder, or run the cdc-monitor that wrote it");
        }
        return held;
    }

    /** A fed row's record (its fields after ctx). */
    static Row record(Row in) {
        Object[] v = new Object[N];
        for (int i = 0; i < N; i++) {
            v[i] = in.get(i + 1);
        }
        return RowFactory.create(v);
    }

    /** An output row: the first {@link #N} fields of {@code rec} and {@code role}. */
    static Row out(Row rec, String role) {
        Object[] v = new Object[N + 1];
        for (int i = 0; i < N; i++) {
            v[i] = rec.get(i);
        }
        v[N] = role;
        return RowFactory.create(v);
    }

    static <T> scala.collection.Seq<T> seq(List<T> list) {
        return CollectionConverters.asScala(list);  // arrays are Scala Seqs in a Row
    }

    static Row state(List<Row> h, List<Row> rows, List<String> fin, Long horizon, List<String> open,
                     List<Row> progress, Row tail) {
        return RowFactory.create(VERSION, h == null ? null : seq(h), rows == null ? null : seq(rows),
                fin == null ? null : seq(fin), horizon, open == null ? null : seq(open),
                progress == null ? null : seq(progress), tail);
    }

    static <T> List<T> list(Row row, int i) {
        return row == null || row.isNullAt(i) ? List.of() : row.getList(i);
    }

    @Override
    public Iterator<Row> call(String ctx, Iterator<Row> rows, GroupState<Row> state) {
        Row held = checked(state.exists() ? state.get() : null);
        List<Row> out = new ArrayList<>();
        if (ctx.startsWith(PARTITION)) {
            while (rows.hasNext()) {
                out.add(out(record(rows.next()), NEW));
            }
            return out.iterator();
        }
        if (ctx.startsWith(KEY)) {
            KeyHistory.step(held, rows, state, keep, ttlMs, out);
            return out.iterator();
        }
        List<Row> fresh = new ArrayList<>();
        rows.forEachRemaining(fresh::add);
        if (ctx.startsWith(SERVER)) {
            ServerContext.Step step = ServerContext.step(held, fresh, System.currentTimeMillis(), this,
                    ctx.substring(SERVER.length() + SEP.length()));
            state.update(step.state);
            if (step.hold) {  // held transactions and candidates are judged again after awaitMs
                state.setTimeoutDuration(Math.max(awaitMs, 1));
            }
            return step.out.iterator();
        }
        Row tail = held == null || held.isNullAt(S_TAIL) ? null : held.getStruct(S_TAIL);
        Row kept = tail(tail, fresh, out);
        state.update(state(null, null, null, null, null, null, kept));
        return out.iterator();
    }

    /**
     * An L group: emits the held newest change event ({@code tail}) unless a fed row is at or before
     * it in its partition (an earlier log's: the topic was created again); keeps the newest by
     * (event time, topic, partition, offset), so a lag spike crossing a batch boundary counts once.
     */
    public static Row tail(Row held, List<Row> fresh, List<Row> out) {
        if (held != null) {
            for (Row r : fresh) {
                if (r.getString(1).equals(held.getString(0)) && r.getInt(2) == held.getInt(1)
                        && r.getLong(3) <= held.getLong(2)) {
                    held = null;
                    break;
                }
            }
        }
        if (held != null) {
            out.add(out(held, TAIL));
        }
        Row newest = null;
        for (Row r : fresh) {
            if (newest == null || newerTail(r, 1, newest, 1)) {
                newest = r;
            }
        }
        if (newest != null && (held == null || newerTail(newest, 1, held, 0))) {
            Object[] v = new Object[N + 1];
            for (int i = 0; i < N; i++) {
                v[i] = newest.get(i + 1);
            }
            v[N] = newest.get(1 + N + 3);  // record_ts_ms (FIELDS' fourth)
            held = RowFactory.create(v);
        }
        return held;
    }

    /** Whether row {@code a} (its record from field {@code ia}) orders after {@code b} (from {@code ib}):
     * by event time (a missing one first), topic, partition, offset. */
    private static boolean newerTail(Row a, int ia, Row b, int ib) {
        int c = Long.compare(orderTs(a, ia), orderTs(b, ib));
        if (c == 0) {
            c = a.getString(ia).compareTo(b.getString(ib));
        }
        if (c == 0) {
            c = Integer.compare(a.getInt(ia + 1), b.getInt(ib + 1));
        }
        if (c == 0) {
            c = Long.compare(a.getLong(ia + 2), b.getLong(ib + 2));
        }
        return c > 0;
    }

    private static long orderTs(Row r, int i) {
        int at = i == 0 ? N : 1 + N + 3;  // a held tail's order_ts, or a fed row's record_ts_ms
        return r.isNullAt(at) ? Long.MIN_VALUE : r.getLong(at);
    }

    /** {@code vocabulary}: the roles, group kinds, separator and fed columns, for the tests that hold Python's equal. */
    public static void main(String[] args) {
        if (args.length == 1 && args[0].equals("vocabulary")) {
            System.out.println("roles " + String.join(" ", NEW, CARRIED, CANDIDATE, TAIL, FINAL, EVICTED, PENDING));
            System.out.println("kinds " + String.join(" ", KEY, PARTITION, SERVER, LAG));
            System.out.println("skinds " + MARKER + " " + DATA);
            System.out.println("sep " + (int) SEP.charAt(0));
            System.out.println("input " + String.join(" ", INPUT.fieldNames()));
            System.out.println("output " + String.join(" ", OUTPUT.fieldNames()));
            System.out.println("version " + VERSION);
            return;
        }
        System.err.println("usage: Carry vocabulary");
        System.exit(2);
    }
}
