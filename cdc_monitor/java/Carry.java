package cdcmonitor;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataType;
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
 * ({@code flatMapGroupsWithState}, no Python worker). {@code watch/carry.py} composes its input (the
 * records decoded once, before the operator) and describes the groups; this class holds them:
 *
 * <ul>
 *   <li>{@code K} topic, key: the facts of the key's last records per partition ({@link KeyHistory}), and
 *       the key pass judged there ({@link KeyHistory#judge}: KeyJudge's walk of the kept records and the
 *       new ones, its findings on new records emitted {@code found});</li>
 *   <li>{@code P} topic, partition: records with no key history, emitted {@code new}, no state (the copies
 *       among their data events without a key judged alike);</li>
 *   <li>{@code S} server: open and pending transactions, orphan candidates, finalized ids and the
 *       data partitions' progress ({@link ServerContext});</li>
 *   <li>{@code L} server, table: the newest change event with a lag ({@link #tail});</li>
 *   <li>{@code ~} one per state partition, fed a tick by every input partition: the key budget's
 *       bookkeeping ({@link KeyHistory#budget}).</li>
 * </ul>
 *
 * <p>Input rows ({@link #INPUT}): {@code ctx}, the record's facts ({@link #FACT}: what the checks read
 * from a record carried as context), the server and table groups' fields ({@link #FIELDS}; null for K
 * and P rows) and {@code rest}, the record's other decoded columns (null for S and L rows: only a K
 * or P group emits a record as {@code new}). Output rows ({@link #output}): the facts, {@code rest}
 * (null on context rows), {@code found} (a {@link #FINDING}, on {@code found} rows only) and the role. The state ({@link #STATE}) is the format version and the
 * group's state as compact bytes ({@link Codec}, one schema per kind: {@link #KSTATE},
 * {@link #SSTATE}, {@link #LSTATE}, {@link #BSTATE}); a state of another version is refused (a
 * checkpoint of another cdc-monitor). The vocabulary (roles, group kinds, the separator) is
 * {@code watch/carry.py}'s; {@code main("vocabulary")} prints it for the test that holds the two equal.
 */
public final class Carry implements FlatMapGroupsWithStateFunction<String, Row, Row, Row> {
    private static final long serialVersionUID = 2L;

    /** The state's format: 3, narrow facts as compact bytes, numbers against the previous record's, a key's
     * older records as the facts its copies are found by ({@link KeyHistory}); 2: the same facts whole, numbers
     * against the previous field's; 1: whole Kafka records as Spark rows. */
    public static final int VERSION = 3;

    public static final String NEW = "new", CARRIED = "carried", CANDIDATE = "candidate", TAIL = "tail",
            FINAL = "final", EVICTED = "evicted", PENDING = "pending", CAPPED = "capped", FOUND = "found";
    public static final String KEY = "K", PARTITION = "P", SERVER = "S", LAG = "L", BUDGET = "~";
    public static final String SEP = "\u001f";
    /** skind: a transaction marker (BEGIN or END) or a data event naming a transaction. */
    public static final String MARKER = "marker", DATA = "data";

    private static final DataType S = DataTypes.StringType, L = DataTypes.LongType, B = DataTypes.BooleanType;
    /** An END's counts per collection (the decoder's marker_collections). */
    public static final StructType COLLECTION = new StructType()
            .add("data_collection", S)
            .add("event_count", L);
    /**
     * A record's facts: where it is and what the checks read from it as context (the key pass, the
     * transaction and table passes, stalls, sequences, the census). Row images as one digest
     * ({@code before}/{@code after}: the digest where the image is present); the source block as its
     * presence and PostgreSQL's {@code lsn} and {@code sequence}; {@code content_hash}, a key's data
     * event's content (not an events column: only {@link KeyHistory} reads it).
     */
    public static final StructType FACT = new StructType()
            .add("topic", S).add("partition", DataTypes.IntegerType).add("offset", L)
            .add("record_ts_ms", L).add("ts_ms", L).add("ts_ms_raw", S).add("source_ts_ms", L).add("source_ts_raw", S)
            .add("ts_us", L).add("source_ts_us", L)
            .add("key", S).add("kind", S).add("server", S).add("table", S).add("op", S).add("snapshot", B)
            .add("snapshot_marker", S).add("txn_id", S).add("txn_total_order", L).add("txn_collection_order", L)
            .add("position", DataTypes.createArrayType(L)).add("flavour", S).add("has_source", B)
            .add("source_lsn", S).add("source_sequence", S).add("before", S).add("after", S).add("key_payload", S)
            .add("status", S).add("marker_id", S).add("marker_key", S).add("marker_event_count", L)
            .add("marker_collections", DataTypes.createArrayType(COLLECTION)).add("update_hash", L)
            .add("value_hash", L).add("value_schema_hash", L).add("data_event", B).add("change_event", B)
            .add("snapshot_event", B).add("envelope", B).add("has_message", B).add("content_hash", L);
    /** The server and table groups' fields of a fed row (order_ts: its record time; an L row's: the event's ts_ms). */
    public static final StructType FIELDS = new StructType()
            .add("skind", S)
            .add("sstatus", S)
            .add("txn", S)
            .add("order_ts", L)
            .add("tbl", S)
            .add("event_count", L)
            .add("collections", DataTypes.createArrayType(COLLECTION));
    static final int N = FACT.size();
    static final int F_TOPIC = 0, F_KEY = 10, F_KEY_PAYLOAD = FACT.fieldIndex("key_payload"),
            F_KIND = FACT.fieldIndex("kind"), F_OP = FACT.fieldIndex("op"), F_RECORD_TS = FACT.fieldIndex("record_ts_ms"),
            F_TXN = FACT.fieldIndex("txn_id"), F_SERVER = FACT.fieldIndex("server"), F_TABLE = FACT.fieldIndex("table");
    /** A data event's content as the checks' copies compare it (checks/ordering.py's CONTENT_HASH, over the
     * digests; K rows only): what a key's older records keep of their content ({@link KeyHistory}). */
    static final int F_CONTENT = FACT.fieldIndex("content_hash");
    /** The input's last column: the record's other decoded columns (a struct, carry.py's). */
    static final int REST = 1 + N + FIELDS.size();

    public static StructType input(StructType rest) {
        return concat(new StructType().add("ctx", S), FACT, FIELDS, new StructType().add("rest", rest));
    }

    public static StructType output(StructType rest) {
        return concat(FACT, new StructType().add("rest", rest).add("found", FINDING).add("role", S));
    }

    /** A finding a group's walk judged in the operator (role {@link #FOUND}; the row's facts say where it
     * points: topic, partition, offset, record time, key, transaction, server, table): its rule, the offsets
     * it names, its message, and whether it holds only where its partition was read from its start (the
     * driver knows that: checks/ordering.py). */
    public static final StructType FINDING = new StructType()
            .add("rule", S)
            .add("offsets", DataTypes.createArrayType(L))
            .add("message", S)
            .add("first", B);

    /** A held S row: the record's facts, its fields, the wall time (ms) it was first seen. */
    public static final StructType HELD = concat(FACT, FIELDS, new StructType().add("seen_ms", L));
    public static final StructType PROGRESS = new StructType()
            .add("topic", S)
            .add("partition", DataTypes.IntegerType)
            .add("tbl", S)
            .add("ts", L);
    /** A held L row: the record's facts and its order (the event's ts_ms). */
    public static final StructType TAIL_ROW = concat(FACT, new StructType().add("order_ts", L));
    /** A K group: when it was last seen (the batch's processing time), its records' facts (no topic, key
     * or key payload: the group's key says them) and which of them are thin ({@link KeyHistory#whole}). */
    public static final StructType KSTATE = new StructType()
            .add("seen", L)
            .add("h", DataTypes.createArrayType(FACT))
            .add("thin", DataTypes.createArrayType(DataTypes.IntegerType));
    public static final StructType SSTATE = new StructType()
            .add("rows", DataTypes.createArrayType(HELD))
            .add("final", DataTypes.createArrayType(S))
            .add("horizon", L)
            .add("open", DataTypes.createArrayType(S))
            .add("progress", DataTypes.createArrayType(PROGRESS));
    public static final StructType LSTATE = new StructType().add("tail", TAIL_ROW);
    /** The key budget of one state partition: the keys it saw per batch (processing time, keys), oldest first. */
    public static final StructType BSTATE = new StructType()
            .add("seen", DataTypes.createArrayType(new StructType().add("t", L).add("n", L)));
    public static final StructType STATE = new StructType()
            .add("v", DataTypes.IntegerType)
            .add("b", DataTypes.BinaryType);
    // a held S row's fields (the fed row's, less ctx)
    static final int SKIND = N, STATUS = N + 1, TXN = N + 2, TS = N + 3, TBL = N + 4, COUNT = N + 5, COLLS = N + 6,
            SEEN = N + 7;
    // the S state's fields
    static final int S_ROWS = 0, S_FINAL = 1, S_HORIZON = 2, S_OPEN = 3, S_PROGRESS = 4;

    final int keep;
    final long ttlMs;
    final long awaitMs;
    final int finalMemory;
    final ArrayList<String> transactionServers;
    final HashMap<String, Integer> topicPartitions;
    final long maxKeys;
    final long reviewMs;
    int statePartitions = 1;
    // per task (a task's groups are called in ctx order, K first, the budget's ~ after the data groups,
    // then the timed-out ones): K groups with records in this batch, then what the budget says of them
    transient long touched;
    transient KeyHistory.Horizon horizon;

    /**
     * @param keep records kept per key and partition
     * @param ttlMs processing time after which an idle key's history is dropped
     * @param awaitMs wall time a held transaction or orphan candidate waits at most
     * @param finalMemory ids of finalized transactions remembered per server
     * @param transactionServers servers whose transaction topic the stream reads
     * @param topicPartitions partitions of each data topic the stream reads
     * @param maxKeys key histories held at most (0: no budget, only the TTL), spread over the state partitions
     * @param reviewMs how soon after it was seen a key is looked at again for the budget
     */
    public Carry(int keep, long ttlMs, long awaitMs, int finalMemory, List<String> transactionServers,
                 Map<String, Integer> topicPartitions, long maxKeys, long reviewMs) {
        this.keep = keep;
        this.ttlMs = ttlMs;
        this.awaitMs = awaitMs;
        this.finalMemory = finalMemory;
        this.transactionServers = new ArrayList<>(transactionServers);
        this.topicPartitions = new HashMap<>(topicPartitions);
        this.maxKeys = maxKeys;
        this.reviewMs = reviewMs;
    }

    public Carry(int keep, long ttlMs, long awaitMs, int finalMemory, List<String> transactionServers,
                 Map<String, Integer> topicPartitions) {
        this(keep, ttlMs, awaitMs, finalMemory, transactionServers, topicPartitions, 0L, 60_000L);
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

    /** The operator over {@code input} ({@link #input}'s columns), for Python's py4j. With a key budget,
     * each input partition also feeds one tick to every state partition's budget group. */
    public static Dataset<Row> apply(Dataset<Row> input, Carry settings) {
        StructType in = input.schema();
        StructType rest = (StructType) in.fields()[REST].dataType();
        Dataset<Row> fed = input;
        if (settings.maxKeys > 0) {
            SparkSession spark = input.sparkSession();
            settings.statePartitions = Integer.parseInt(spark.conf().get("spark.sql.shuffle.partitions"));
            List<String> ticks = tickKeys(spark, settings.statePartitions);
            int width = in.size();
            StructType nullable = new StructType();  // (a tick has only its ctx)
            for (var f : in.fields()) {
                nullable = nullable.add(f.name(), f.dataType(), true);
            }
            fed = input.mapPartitions((MapPartitionsFunction<Row, Row>) rows -> {
                List<Row> first = new ArrayList<>(ticks.size());
                for (String t : ticks) {
                    Object[] v = new Object[width];
                    v[0] = t;
                    first.add(RowFactory.create(v));
                }
                Iterator<Row> head = first.iterator();
                return new Iterator<Row>() {
                    public boolean hasNext() {
                        return head.hasNext() || rows.hasNext();
                    }

                    public Row next() {
                        return head.hasNext() ? head.next() : rows.next();
                    }
                };
            }, Encoders.row(nullable));
        }
        fed = fed.mapPartitions((MapPartitionsFunction<Row, Row>) Carry::fewerTails, Encoders.row(fed.schema()));
        return fed.groupByKey((MapFunction<Row, String>) r -> r.getString(0), Encoders.STRING())
                .flatMapGroupsWithState(settings, OutputMode.Append(), Encoders.row(STATE), Encoders.row(output(rest)),
                        GroupStateTimeout.ProcessingTimeTimeout());
    }

    /**
     * An input partition's rows with, of each table's ({@code L}) rows, only those {@link #tail} reads:
     * the newest and, per topic partition, the one of lowest offset (whether the held tail is of an earlier
     * log). The others would be shuffled to the table's group only to be passed over there.
     */
    static Iterator<Row> fewerTails(Iterator<Row> rows) {
        Map<String, Row> newest = new java.util.LinkedHashMap<>();
        Map<List<Object>, Row> lowest = new java.util.LinkedHashMap<>();
        return new Iterator<Row>() {
            Row next;
            Iterator<Row> tails;

            public boolean hasNext() {
                while (next == null && tails == null && rows.hasNext()) {
                    Row r = rows.next();
                    String ctx = r.getString(0);
                    if (!ctx.startsWith(LAG)) {
                        next = r;
                        break;
                    }
                    newest.merge(ctx, r, (a, b) -> newerTail(b, 1, a, 1) ? b : a);
                    lowest.merge(java.util.Arrays.asList(ctx, r.getString(1), r.getInt(2)), r,
                            (a, b) -> b.getLong(3) < a.getLong(3) ? b : a);
                }
                if (next == null && tails == null) {
                    java.util.Set<Row> kept = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
                    kept.addAll(newest.values());
                    kept.addAll(lowest.values());
                    tails = kept.iterator();
                }
                return next != null || tails.hasNext();
            }

            public Row next() {
                if (!hasNext()) {
                    throw new java.util.NoSuchElementException();
                }
                if (next != null) {
                    Row r = next;
                    next = null;
                    return r;
                }
                return tails.next();
            }
        };
    }

    /** One budget group key per state partition: a key Spark's hash partitioning of the groups (Murmur3,
     * seed 42, as SQL's {@code hash}) sends there. */
    static List<String> tickKeys(SparkSession spark, int partitions) {
        String[] found = new String[partitions];
        int left = partitions;
        List<Row> rows = spark.range(0, 64L * partitions + 64)
                .selectExpr("concat('" + BUDGET + "', CAST(id AS STRING)) AS c")
                .selectExpr("c", "pmod(hash(c), " + partitions + ") AS p").collectAsList();
        for (Row r : rows) {
            int p = r.getInt(1);
            if (found[p] == null) {
                found[p] = r.getString(0);
                left--;
            }
        }
        if (left > 0) {
            throw new IllegalStateException("no budget key for some of " + partitions + " state partitions");
        }
        return List.of(found);
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

    /** A group's state (of schema {@code schema}) as the operator keeps it; {@code ctx}: the group's key
     * (the texts it holds are written as references to it). */
    public static Row pack(Row st, StructType schema, String ctx) {
        return RowFactory.create(VERSION, Codec.encode(st, schema, ctx));
    }

    public static Row pack(Row st, StructType schema) {
        return pack(st, schema, "");
    }

    /** The group's state kept by {@link #pack} (its version checked), or null. */
    public static Row unpack(Row held, StructType schema, String ctx) {
        return checked(held) == null ? null : Codec.decode((byte[]) held.get(1), schema, ctx);
    }

    public static Row unpack(Row held, StructType schema) {
        return unpack(held, schema, "");
    }

    /** A fed row's facts (its fields after ctx). */
    static Row record(Row in) {
        Object[] v = new Object[N];
        for (int i = 0; i < N; i++) {
            v[i] = in.get(i + 1);
        }
        return RowFactory.create(v);
    }

    /** An output row: the first {@link #N} fields of {@code rec}, {@code rest} and {@code role}. */
    static Row out(Row rec, Object rest, String role) {
        Object[] v = new Object[N + 3];
        for (int i = 0; i < N; i++) {
            v[i] = rec.get(i);
        }
        v[N] = rest;
        v[N + 2] = role;
        return RowFactory.create(v);
    }

    /** An output row of a finding {@code f} of KeyJudge's walk (its UDF's row: rule, partition, offset,
     * offsets, key, txn_id, message, server, table, record_ts_ms) on a record of {@code topic}. */
    static Row found(String topic, Row f, boolean first) {
        Object[] v = new Object[N + 3];
        v[F_TOPIC] = topic;
        v[1] = f.get(1);
        v[2] = f.get(2);
        v[F_RECORD_TS] = f.get(9);
        v[F_KEY] = f.get(4);
        v[F_TXN] = f.get(5);
        v[F_SERVER] = f.get(7);
        v[F_TABLE] = f.get(8);
        v[N + 1] = RowFactory.create(f.get(0), f.get(3) instanceof List<?> l ? seq(new ArrayList<>(l)) : f.get(3),
                f.get(6), first);
        v[N + 2] = FOUND;
        return RowFactory.create(v);
    }

    static Row out(Row rec, String role) {
        return out(rec, null, role);
    }

    /** {@code rec}'s first {@link #N} fields with some set to null (what a state need not keep). */
    static Row without(Row rec, int... fields) {
        Object[] v = new Object[N];
        for (int i = 0; i < N; i++) {
            v[i] = rec.get(i);
        }
        for (int f : fields) {
            v[f] = null;
        }
        return RowFactory.create(v);
    }

    static <T> scala.collection.Seq<T> seq(List<T> list) {
        return CollectionConverters.asScala(list);  // arrays are Scala Seqs in a Row
    }

    static Row sstate(List<Row> rows, List<String> fin, Long horizon, List<String> open, List<Row> progress) {
        return RowFactory.create(seq(rows), seq(fin), horizon, seq(open), seq(progress));
    }

    static <T> List<T> list(Row row, int i) {
        return row == null || row.isNullAt(i) ? List.of() : row.getList(i);
    }

    @Override
    public Iterator<Row> call(String ctx, Iterator<Row> rows, GroupState<Row> state) {
        Row held = checked(state.exists() ? state.get() : null);
        List<Row> out = new ArrayList<>();
        if (ctx.startsWith(PARTITION)) {
            List<Row> keyless = new ArrayList<>();  // (data events without a key: their copies are judged)
            while (rows.hasNext()) {
                Row r = rows.next();
                Row rec = record(r);
                out.add(out(rec, r.get(REST), NEW));
                if (!rec.isNullAt(F_CONTENT)) {
                    keyless.add(rec);
                }
            }
            if (!keyless.isEmpty()) {
                keyless.sort(java.util.Comparator.comparingLong(r -> r.getLong(2)));
                KeyHistory.judge(keyless.get(0).getString(F_TOPIC), keyless, null, false, out);
            }
            return out.iterator();
        }
        if (ctx.startsWith(KEY)) {
            KeyHistory.step(ctx, held, rows, state, this, out);
            return out.iterator();
        }
        if (ctx.startsWith(BUDGET)) {
            rows.forEachRemaining(r -> { });
            horizon = KeyHistory.budget(held, state, this);
            return out.iterator();
        }
        List<Row> fresh = new ArrayList<>();
        rows.forEachRemaining(fresh::add);
        if (ctx.startsWith(SERVER)) {
            ServerContext.Step step = ServerContext.step(unpack(held, SSTATE, ctx), fresh, System.currentTimeMillis(),
                    this, ctx.substring(SERVER.length() + SEP.length()));
            state.update(pack(step.state, SSTATE, ctx));
            if (step.hold) {  // held transactions and candidates are judged again after awaitMs
                state.setTimeoutDuration(Math.max(awaitMs, 1));
            }
            return step.out.iterator();
        }
        Row st = unpack(held, LSTATE, ctx);
        Row tail = st == null || st.isNullAt(0) ? null : st.getStruct(0);
        Row kept = tail(tail, fresh, out);
        state.update(pack(RowFactory.create(kept), LSTATE, ctx));
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
            v[F_KEY] = null;  // (a tail's findings are its own batch's: the key text is not read again)
            v[N] = newest.get(1 + N + 3);  // order_ts (FIELDS' fourth)
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
        int at = i == 0 ? N : 1 + N + 3;  // a held tail's order_ts, or a fed row's
        return r.isNullAt(at) ? Long.MIN_VALUE : r.getLong(at);
    }

    /** {@code vocabulary}: the roles, group kinds, separator and fed columns, for the tests that hold Python's equal. */
    public static void main(String[] args) {
        if (args.length == 1 && args[0].equals("vocabulary")) {
            System.out.println("roles " + String.join(" ", NEW, CARRIED, CANDIDATE, TAIL, FINAL, EVICTED, PENDING, CAPPED,
                    FOUND));
            System.out.println("kinds " + String.join(" ", KEY, PARTITION, SERVER, LAG, BUDGET));
            System.out.println("skinds " + MARKER + " " + DATA);
            System.out.println("sep " + (int) SEP.charAt(0));
            System.out.println("input " + String.join(" ", input(new StructType()).fieldNames()));
            System.out.println("output " + String.join(" ", output(new StructType()).fieldNames()));
            System.out.println("version " + VERSION);
            System.out.println("finding " + FINDING.simpleString());
            return;
        }
        System.err.println("usage: Carry vocabulary");
        System.exit(2);
    }
}
