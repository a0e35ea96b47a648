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
    SparkSession session = built.sparkSession();
    for (Dataset<?> frame : kept) {
      Option<CachedData> cached = session.sharedState().cacheManager().lookupCachedData(frame);
      if (cached.isEmpty()) {
        throw new IllegalArgumentException("a kept frame is not cached");
      }
      this.kept.add(cached.get().cachedRepresentation().cacheBuilder());
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

  /**
   * The optimized template over new leaves, texts and kept frames (persisted, in the order the
   * template's were): a Dataset whose optimized plan is given, not computed.
   */
  public Dataset<Row> instantiateOptimized(SparkSession session, Map<Integer, Dataset<?>> leaves,
      Map<String, String> texts, List<Dataset<?>> keptFrames) {
    if (optimized == null || keptFrames.size() != kept.size()) {
      throw new IllegalArgumentException("a template without its optimized plan or with other kept frames");
    }
    Map<Integer, LogicalRDD> byId = new HashMap<>();
    for (Map.Entry<Integer, Dataset<?>> e : leaves.entrySet()) {
      byId.put(e.getKey(), asLeaf(e.getValue()));
    }
    Map<CachedRDDBuilder, InMemoryRelation> relations = new IdentityHashMap<>();
    for (int i = 0; i < kept.size(); i++) {
      Option<CachedData> cached = session.sharedState().cacheManager().lookupCachedData(keptFrames.get(i));
      if (cached.isEmpty()) {
        throw new IllegalArgumentException("a kept frame is not cached");
      }
      relations.put(kept.get(i), cached.get().cachedRepresentation());
    }
    Map<String, Literal> maps = new HashMap<>();
    for (JsonToStructs j : facts) {
      String text = texts.get(((Literal) j.child()).value().toString());
      if (text != null) {
        Literal fresh = new Literal(CatalystTypeConverters$.MODULE$.convertToCatalyst(text), StringType$.MODULE$);
        Expression parse = j.withNewChildren(CollectionConverters.asScala(List.<Expression>of(fresh)).toSeq());
        maps.put(marker(j.eval(null)), new Literal(parse.eval(null), j.dataType()));
      }
    }
    LogicalPlan swapped = optimized.transformUp(new SwapLeaves(byId, session)).transformUp(new SwapCached(relations));
    LogicalPlan out = (LogicalPlan) swapped.transformAllExpressions(new SwapMaps(maps));
    QueryExecution$ defaults = QueryExecution$.MODULE$;
    LogicalPlan analyzed = (LogicalPlan) plan.transformUp(new SwapLeaves(byId, session))
        .transformAllExpressions(new SwapTexts(texts));
    analyzed.setAnalyzed();
    QueryExecution qe = new Prepared(session, analyzed, out, defaults.$lessinit$greater$default$3(),
        defaults.$lessinit$greater$default$4(), defaults.$lessinit$greater$default$5(),
        defaults.$lessinit$greater$default$6(), defaults.$lessinit$greater$default$7(),
        defaults.$lessinit$greater$default$8());
    return new Dataset<Row>(qe, RowEncoder$.MODULE$.encoderFor(plan.schema()));
  }

  /** The optimized plan of a Dataset without what its persisted frames hold (to compare two). */
  public static LogicalPlan uncached(Dataset<?> frame) {
    return frame.queryExecution().optimizedPlan().transformUp(new Uncache());
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

  /** The id of the RDD a checkpointed Dataset reads (how its leaf is named in a template). */
  public static int leafId(Dataset<?> checkpoint) {
    return asLeaf(checkpoint).rdd().id();
  }

  /**
   * The template over new leaves and texts: leaves maps the RDD id of a leaf it was built over to
   * the checkpoint replacing it; texts maps a literal it holds to its replacement.
   */
  public Dataset<Row> instantiate(SparkSession session, Map<Integer, Dataset<?>> leaves, Map<String, String> texts) {
    Map<Integer, LogicalRDD> byId = new HashMap<>();
    for (Map.Entry<Integer, Dataset<?>> e : leaves.entrySet()) {
      byId.put(e.getKey(), asLeaf(e.getValue()));
    }
    LogicalPlan swapped = plan.transformUp(new SwapLeaves(byId, session));
    LogicalPlan out = (LogicalPlan) swapped.transformAllExpressions(new SwapTexts(texts));
    out.setAnalyzed();
    return Dataset$.MODULE$.ofRows(session, out);
  }

  private static LogicalRDD asLeaf(Dataset<?> checkpoint) {
    LogicalPlan leaf = checkpoint.queryExecution().analyzed();
    if (!(leaf instanceof LogicalRDD)) {
      throw new IllegalArgumentException("not a checkpoint: " + leaf.nodeName());
    }
    return (LogicalRDD) leaf;
  }

  /** Each occurrence of a named leaf: the new checkpoint's rows under the occurrence's attributes. */
  @SuppressWarnings({"rawtypes", "unchecked"})
  private static final class SwapLeaves extends AbstractPartialFunction<LogicalPlan, LogicalPlan> {
    private final Map<Integer, LogicalRDD> byId;
    private final SparkSession session;

    SwapLeaves(Map<Integer, LogicalRDD> byId, SparkSession session) {
      this.byId = byId;
      this.session = session;
    }

    @Override
    public boolean isDefinedAt(LogicalPlan p) {
      return p instanceof LogicalRDD && byId.containsKey(((LogicalRDD) p).rdd().id());
    }

    @Override
    public <A1 extends LogicalPlan, B1> B1 applyOrElse(A1 p, Function1<A1, B1> otherwise) {
      if (!isDefinedAt(p)) {
        return otherwise.apply(p);
      }
      LogicalRDD old = (LogicalRDD) p;
      LogicalRDD fresh = byId.get(old.rdd().id());
      Seq<Object> other = old.otherCopyArgs(); // session, statistics, constraints, checkpointed input
      Statistics stats = fresh.computeStats(); // the new rows' size (join strategies), when it names no column
      Option<Statistics> newStats = stats.attributeStats().isEmpty()
          ? Option.apply(stats) : (Option<Statistics>) other.apply(1);
      // the new rows' partitioning and ordering (a batch can have other partitions), in the occurrence's attributes
      Map<ExprId, Attribute> rename = new HashMap<>();
      List<Attribute> from = CollectionConverters.asJava(fresh.output());
      List<Attribute> to = CollectionConverters.asJava(old.output());
      for (int i = 0; i < from.size(); i++) {
        rename.put(from.get(i).exprId(), to.get(i));
      }
      Rename attributes = new Rename(rename);
      Partitioning partitioning = fresh.outputPartitioning();
      if (partitioning instanceof Expression e) {
        partitioning = (Partitioning) e.transform(attributes);
      }
      List<SortOrder> ordering = new ArrayList<>();
      for (SortOrder order : CollectionConverters.asJava(fresh.outputOrdering())) {
        ordering.add((SortOrder) order.transform(attributes));
      }
      return (B1) old.copy(old.output(), fresh.rdd(), partitioning, CollectionConverters.asScala(ordering).toSeq(),
          old.isStreaming(), old.stream(), session, newStats, (Option) other.apply(2), (Boolean) other.apply(3));
    }
  }

  /** Attributes of one relation as the same columns of another. */
  @SuppressWarnings({"rawtypes", "unchecked"})
  private static final class Rename extends AbstractPartialFunction<Expression, Expression> {
    private final Map<ExprId, Attribute> rename;

    Rename(Map<ExprId, Attribute> rename) {
      this.rename = rename;
    }

    @Override
    public boolean isDefinedAt(Expression e) {
      return e instanceof Attribute a && rename.containsKey(a.exprId());
    }

    @Override
    public <A1 extends Expression, B1> B1 applyOrElse(A1 e, Function1<A1, B1> otherwise) {
      return isDefinedAt(e) ? (B1) rename.get(((Attribute) e).exprId()) : otherwise.apply(e);
    }
  }

  /** Persisted frames: the in-memory relation of the frame persisted in their place. */
  @SuppressWarnings({"rawtypes", "unchecked"})
  private static final class SwapCached extends AbstractPartialFunction<LogicalPlan, LogicalPlan> {
    private final Map<CachedRDDBuilder, InMemoryRelation> relations;

    SwapCached(Map<CachedRDDBuilder, InMemoryRelation> relations) {
      this.relations = relations;
    }

    @Override
    public boolean isDefinedAt(LogicalPlan p) {
      return p instanceof InMemoryRelation r && relations.containsKey(r.cacheBuilder());
    }

    @Override
    public <A1 extends LogicalPlan, B1> B1 applyOrElse(A1 p, Function1<A1, B1> otherwise) {
      if (!isDefinedAt(p)) {
        return otherwise.apply(p);
      }
      InMemoryRelation old = (InMemoryRelation) p;
      return (B1) relations.get(old.cacheBuilder()).withOutput(old.output());
    }
  }

  /** In-memory relations as empty relations of their columns (what they cache is compared analyzed). */
  @SuppressWarnings({"rawtypes", "unchecked"})
  private static final class Uncache extends AbstractPartialFunction<LogicalPlan, LogicalPlan> {
    @Override
    public boolean isDefinedAt(LogicalPlan p) {
      return p instanceof InMemoryRelation;
    }

    @Override
    public <A1 extends LogicalPlan, B1> B1 applyOrElse(A1 p, Function1<A1, B1> otherwise) {
      return p instanceof InMemoryRelation r ? (B1) LocalRelation$.MODULE$.apply(r.output()) : otherwise.apply(p);
    }
  }

  /** Folded facts (map literals named by a key): the new window's. */
  @SuppressWarnings({"rawtypes"})
  private static final class SwapMaps extends AbstractPartialFunction<Expression, Expression> {
    private final Map<String, Literal> maps;

    SwapMaps(Map<String, Literal> maps) {
      this.maps = maps;
    }

    private Literal replacement(Expression e) {
      if (e instanceof Literal lit && lit.dataType() instanceof MapType) {
        String key = marker(lit.value());
        return key == null ? null : maps.get(key);
      }
      return null;
    }

    @Override
    public boolean isDefinedAt(Expression e) {
      return replacement(e) != null;
    }

    @Override
    @SuppressWarnings("unchecked")
    public <A1 extends Expression, B1> B1 applyOrElse(A1 e, Function1<A1, B1> otherwise) {
      Literal lit = replacement(e);
      return lit == null ? otherwise.apply(e) : (B1) lit;
    }
  }

  /** String literals that carry facts: replaced by the new window's texts. */
  @SuppressWarnings({"rawtypes"})
  private static final class SwapTexts extends AbstractPartialFunction<Expression, Expression> {
    private final Map<String, String> texts;

    SwapTexts(Map<String, String> texts) {
      this.texts = texts;
    }

    private String replacement(Expression e) {
      if (e instanceof Literal lit && lit.dataType() instanceof StringType && lit.value() != null) {
        return texts.get(lit.value().toString());
      }
      return null;
    }

    @Override
    public boolean isDefinedAt(Expression e) {
      return replacement(e) != null;
    }

    @Override
    @SuppressWarnings("unchecked")
    public <A1 extends Expression, B1> B1 applyOrElse(A1 e, Function1<A1, B1> otherwise) {
      String text = replacement(e);
      return text == null ? otherwise.apply(e) : (B1) new Literal(CatalystTypeConverters$.MODULE$.convertToCatalyst(text), e.dataType());
    }
  }
}
