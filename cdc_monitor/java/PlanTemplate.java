package cdcmonitor;

import java.util.HashMap;
import java.util.Map;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.CatalystTypeConverters$;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Statistics;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.classic.Dataset$;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.LogicalRDD;
import org.apache.spark.sql.types.StringType;
import scala.Function1;
import scala.Option;
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
 */
public final class PlanTemplate {
  private final LogicalPlan plan;

  public PlanTemplate(Dataset<?> built) {
    this.plan = built.queryExecution().analyzed();
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
      return (B1) old.copy(old.output(), fresh.rdd(), old.outputPartitioning(), old.outputOrdering(),
          old.isStreaming(), old.stream(), session, newStats, (Option) other.apply(2), (Boolean) other.apply(3));
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
