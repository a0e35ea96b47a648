package cdcmonitor;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.CatalystTypeConverters$;
import org.apache.spark.sql.catalyst.QueryPlanningTracker;
import org.apache.spark.sql.catalyst.encoders.RowEncoder$;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.ExprId;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.JsonToStructs;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation$;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Statistics;
import org.apache.spark.sql.catalyst.plans.physical.Partitioning;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.classic.Dataset$;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.CachedData;
import org.apache.spark.sql.execution.LogicalRDD;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.execution.QueryExecution$;
import org.apache.spark.sql.execution.columnar.CachedRDDBuilder;
import org.apache.spark.sql.execution.columnar.InMemoryRelation;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StringType$;
import scala.Function1;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;
import scala.collection.immutable.Seq;
import scala.runtime.AbstractPartialFunction;

/**
 * An analyzed plan built once and run again over other data of the same shape: its leaves that are
 * checkpoints (LogicalRDD) are replaced by other checkpoints with the same columns, and its string
 * literals that carry facts (JSON texts naming their fact, see engine/facts.py) by the new facts.
 * Every occurrence of a leaf keeps the attributes the plan resolved it to (a self-join holds the
 * same checkpoint twice under different attribute ids), so the rest of the plan stays resolved and
 * needs no analysis again. watch's micro-batches plan the same checks over new records each time:
 * building that plan from Python costs ~1,000 JVM round trips and hundreds of analyses; this costs one.
 *
 * Built with the frames its plan persisted, a template also keeps the optimized plan and gives the
 * new one without running the optimizer again (another ~0.4 s of a small batch): there a fact is a
 * map literal (Spark folded the parse of its text), found by the key that names it, and a
 * persisted frame an in-memory relation, replaced by the one the new frame persisted.
 */
public final class PlanTemplate {
  private static final String MARK = "\u0000fact:"; // engine/facts.py FACT_MARK: the key naming a fact
  private final LogicalPlan plan;
  private final LogicalPlan optimized; // null: analyzed only
  private final List<CachedRDDBuilder> kept = new ArrayList<>();
  private final List<JsonToStructs> facts = new ArrayList<>(); // the parse of each fact text in the plan

  public PlanTemplate(Dataset<?> built) {
    this.plan = built.queryExecution().analyzed();
    this.optimized = null;
  }

  /** kept: the frames the plan persisted, still cached (their in-memory relations are in the optimized plan). */
  public PlanTemplate(Dataset<?> built, List<Dataset<?>> kept) {
    this.plan = built.queryExecution().analyzed();
    this.optimized = built.queryExecution().optimizedPlan();
    for (Dataset<?> frame : kept) {
      this.kept.add(cached(built.sparkSession(), frame).cacheBuilder());
    }
    plan.foreach(node -> {
      node.expressions().foreach(root -> {
        root.foreach(e -> {
          if (e instanceof JsonToStructs j && j.child() instanceof Literal lit && lit.value() != null
              && lit.value().toString().startsWith("{\"\\u0000fact:")) {
            facts.add(j);
          }
          return null;
        });
        return null;
      });
      return null;
    });
  }

  /** The id of the RDD a checkpointed Dataset reads (how its leaf is named in a template). */
  public static int leafId(Dataset<?> checkpoint) {
    return asLeaf(checkpoint).rdd().id();
  }

  /**
   * The template over new leaves and texts: leaves maps the RDD id of a leaf it was built over to
   * the checkpoint replacing it; texts maps a literal it holds to its replacement.
   */
  public Dataset<Row> instantiate(SparkSession session, Map<Integer, Dataset<?>> leaves, Map<String, String> texts) {
    return Dataset$.MODULE$.ofRows(session, analyzed(session, byId(leaves), texts));
  }

  /**
   * The optimized template over new leaves, texts and kept frames (persisted, in the order the
   * template's were): a Dataset whose optimized plan is given, not computed.
   */
  public Dataset<Row> instantiateOptimized(SparkSession session, Map<Integer, Dataset<?>> leaves,
      Map<String, String> texts, List<Dataset<?>> keptFrames) {
    if (optimized == null || keptFrames.size() != kept.size()) {
      throw new IllegalArgumentException("a template without its optimized plan or with other kept frames");
    }
    Map<Integer, LogicalRDD> byId = byId(leaves);
    Map<CachedRDDBuilder, InMemoryRelation> relations = new IdentityHashMap<>();
    for (int i = 0; i < kept.size(); i++) {
      relations.put(kept.get(i), cached(session, keptFrames.get(i)));
    }
    Map<String, Literal> maps = new HashMap<>(); // folded facts by the key naming them: the new window's
    for (JsonToStructs j : facts) {
      String text = texts.get(((Literal) j.child()).value().toString());
      if (text != null) {
        Expression parse = j.withNewChildren(CollectionConverters.asScala(List.<Expression>of(text(text, j.child()))).toSeq());
        maps.put(marker(j.eval(null)), new Literal(parse.eval(null), j.dataType()));
      }
    }
    LogicalPlan out = (LogicalPlan) optimized
        .transformUp(new Rule<LogicalPlan>(p -> swapLeaf(p, byId, session)))
        .transformUp(new Rule<LogicalPlan>(p -> p instanceof InMemoryRelation r && relations.containsKey(r.cacheBuilder())
            ? relations.get(r.cacheBuilder()).withOutput(r.output()) : null))
        .transformAllExpressions(new Rule<Expression>(e -> e instanceof Literal lit && lit.dataType() instanceof MapType
            ? maps.get(marker(lit.value())) : null));
    QueryExecution$ defaults = QueryExecution$.MODULE$;
    QueryExecution qe = new Prepared(session, analyzed(session, byId, texts), out, defaults.$lessinit$greater$default$3(),
        defaults.$lessinit$greater$default$4(), defaults.$lessinit$greater$default$5(),
        defaults.$lessinit$greater$default$6(), defaults.$lessinit$greater$default$7(),
        defaults.$lessinit$greater$default$8());
    return new Dataset<Row>(qe, RowEncoder$.MODULE$.encoderFor(plan.schema()));
  }

  /** The optimized plan of a Dataset without what its persisted frames hold (to compare two): each
   * in-memory relation an empty relation of its columns (what they cache is compared analyzed). */
  public static LogicalPlan uncached(Dataset<?> frame) {
    return frame.queryExecution().optimizedPlan().transformUp(new Rule<LogicalPlan>(
        p -> p instanceof InMemoryRelation r ? LocalRelation$.MODULE$.apply(r.output()) : null));
  }

  /** The analyzed template over new leaves, its fact texts replaced: analyzed as it is. */
  private LogicalPlan analyzed(SparkSession session, Map<Integer, LogicalRDD> byId, Map<String, String> texts) {
    LogicalPlan out = (LogicalPlan) plan.transformUp(new Rule<LogicalPlan>(p -> swapLeaf(p, byId, session)))
        .transformAllExpressions(new Rule<Expression>(e -> e instanceof Literal lit && lit.dataType() instanceof StringType
            && lit.value() != null && texts.containsKey(lit.value().toString()) ? text(texts.get(lit.value().toString()), e)
            : null));
    out.setAnalyzed();
    return out;
  }

  private static Map<Integer, LogicalRDD> byId(Map<Integer, Dataset<?>> leaves) {
    Map<Integer, LogicalRDD> byId = new HashMap<>();
    for (Map.Entry<Integer, Dataset<?>> e : leaves.entrySet()) {
      byId.put(e.getKey(), asLeaf(e.getValue()));
    }
    return byId;
  }

  private static LogicalRDD asLeaf(Dataset<?> checkpoint) {
    LogicalPlan leaf = checkpoint.queryExecution().analyzed();
    if (!(leaf instanceof LogicalRDD)) {
      throw new IllegalArgumentException("not a checkpoint: " + leaf.nodeName());
    }
    return (LogicalRDD) leaf;
  }

  /** The in-memory relation of a persisted frame. */
  private static InMemoryRelation cached(SparkSession session, Dataset<?> frame) {
    Option<CachedData> cached = session.sharedState().cacheManager().lookupCachedData(frame);
    if (cached.isEmpty()) {
      throw new IllegalArgumentException("a kept frame is not cached");
    }
    return cached.get().cachedRepresentation();
  }

  /** A string literal of the type of ``like``. */
  private static Literal text(String text, Expression like) {
    return new Literal(CatalystTypeConverters$.MODULE$.convertToCatalyst(text), like.dataType());
  }

  /** The key naming a fact in its parsed map (null: none). */
  private static String marker(Object value) {
    if (!(value instanceof MapData map)) {
      return null;
    }
    ArrayData keys = map.keyArray();
    for (int i = 0; i < keys.numElements(); i++) {
      Object key = keys.get(i, StringType$.MODULE$);
      if (key != null && key.toString().startsWith(MARK)) {
        return key.toString();
      }
    }
    return null;
  }

  /**
   * An occurrence of a named leaf: the new checkpoint's rows under the occurrence's attributes, with
   * the new rows' partitioning, ordering (a batch can have other partitions) and size (null: not one).
   */
  @SuppressWarnings({"rawtypes", "unchecked"})
  private static LogicalPlan swapLeaf(LogicalPlan p, Map<Integer, LogicalRDD> byId, SparkSession session) {
    if (!(p instanceof LogicalRDD old) || !byId.containsKey(old.rdd().id())) {
      return null;
    }
    LogicalRDD fresh = byId.get(old.rdd().id());
    Seq<Object> other = old.otherCopyArgs(); // session, statistics, constraints, checkpointed input
    Statistics stats = fresh.computeStats(); // the new rows' size (join strategies), when it names no column
    Option<Statistics> newStats = stats.attributeStats().isEmpty() ? Option.apply(stats) : (Option<Statistics>) other.apply(1);
    Map<ExprId, Attribute> rename = new HashMap<>();
    List<Attribute> from = CollectionConverters.asJava(fresh.output());
    List<Attribute> to = CollectionConverters.asJava(old.output());
    for (int i = 0; i < from.size(); i++) {
      rename.put(from.get(i).exprId(), to.get(i));
    }
    Rule<Expression> attributes = new Rule<>(e -> e instanceof Attribute a ? rename.get(a.exprId()) : null);
    Partitioning partitioning = fresh.outputPartitioning();
    if (partitioning instanceof Expression e) {
      partitioning = (Partitioning) e.transform(attributes);
    }
    List<SortOrder> ordering = new ArrayList<>();
    for (SortOrder order : CollectionConverters.asJava(fresh.outputOrdering())) {
      ordering.add((SortOrder) order.transform(attributes));
    }
    return old.copy(old.output(), fresh.rdd(), partitioning, CollectionConverters.asScala(ordering).toSeq(),
        old.isStreaming(), old.stream(), session, newStats, (Option) other.apply(2), (Boolean) other.apply(3));
  }

  /** A query whose optimized plan is known. */
  private static final class Prepared extends QueryExecution {
    private final LogicalPlan optimizedPlan;

    Prepared(SparkSession session, LogicalPlan analyzed, LogicalPlan optimizedPlan, QueryPlanningTracker tracker,
        scala.Enumeration.Value mode, Option<org.apache.spark.sql.execution.ShuffleCleanupMode> cleanup,
        boolean refresh, java.util.UUID id, Option<org.apache.spark.sql.catalyst.analysis.Analyzer> analyzer) {
      super(session, analyzed, tracker, mode, cleanup, refresh, id, analyzer);
      this.optimizedPlan = optimizedPlan;
    }

    @Override
    public LogicalPlan optimizedPlan() {
      return optimizedPlan;
    }
  }

  /** A Catalyst rule (a Scala partial function) from a Java function: defined where it returns a node. */
  private static final class Rule<T> extends AbstractPartialFunction<T, T> {
    private final java.util.function.Function<T, T> rule;

    Rule(java.util.function.Function<T, T> rule) {
      this.rule = rule;
    }

    @Override
    public boolean isDefinedAt(T x) {
      return rule.apply(x) != null;
    }

    @Override
    @SuppressWarnings("unchecked")
    public <A1 extends T, B1> B1 applyOrElse(A1 x, Function1<A1, B1> otherwise) {
      T out = rule.apply(x);
      return out == null ? otherwise.apply(x) : (B1) out;
    }
  }
}
