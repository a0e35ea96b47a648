package cdcmonitor;

import java.util.Arrays;

import org.apache.spark.api.python.PythonUtils;
import scala.collection.immutable.Seq;

/**
 * A Scala Seq of a few JVM values in one py4j call. PySpark turns every list of columns it hands
 * the JVM (a select, a struct, a concat...) into a Seq with PythonUtils.toSeq(java.util.List), and
 * py4j builds that list with a round trip per element: ~1,900 of a watch batch's ~5,800 calls.
 * Same result (PythonUtils.toSeq of the same values); lists longer than these take the old way.
 */
public final class Seqs {
  private Seqs() {}

  public static Seq<Object> of() {
    return PythonUtils.toSeq(Arrays.<Object>asList());
  }

  public static Seq<Object> of(Object v0) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0));
  }

  public static Seq<Object> of(Object v0, Object v1) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4, Object v5) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4, v5));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4, Object v5, Object v6) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4, v5, v6));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4, Object v5, Object v6, Object v7) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4, v5, v6, v7));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4, Object v5, Object v6, Object v7, Object v8) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4, v5, v6, v7, v8));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4, Object v5, Object v6, Object v7, Object v8, Object v9) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4, Object v5, Object v6, Object v7, Object v8, Object v9, Object v10) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4, Object v5, Object v6, Object v7, Object v8, Object v9, Object v10, Object v11) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4, Object v5, Object v6, Object v7, Object v8, Object v9, Object v10, Object v11, Object v12) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4, Object v5, Object v6, Object v7, Object v8, Object v9, Object v10, Object v11, Object v12, Object v13) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4, Object v5, Object v6, Object v7, Object v8, Object v9, Object v10, Object v11, Object v12, Object v13, Object v14) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4, Object v5, Object v6, Object v7, Object v8, Object v9, Object v10, Object v11, Object v12, Object v13, Object v14, Object v15) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4, Object v5, Object v6, Object v7, Object v8, Object v9, Object v10, Object v11, Object v12, Object v13, Object v14, Object v15, Object v16) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15, v16));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4, Object v5, Object v6, Object v7, Object v8, Object v9, Object v10, Object v11, Object v12, Object v13, Object v14, Object v15, Object v16, Object v17) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15, v16, v17));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4, Object v5, Object v6, Object v7, Object v8, Object v9, Object v10, Object v11, Object v12, Object v13, Object v14, Object v15, Object v16, Object v17, Object v18) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15, v16, v17, v18));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4, Object v5, Object v6, Object v7, Object v8, Object v9, Object v10, Object v11, Object v12, Object v13, Object v14, Object v15, Object v16, Object v17, Object v18, Object v19) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15, v16, v17, v18, v19));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4, Object v5, Object v6, Object v7, Object v8, Object v9, Object v10, Object v11, Object v12, Object v13, Object v14, Object v15, Object v16, Object v17, Object v18, Object v19, Object v20) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15, v16, v17, v18, v19, v20));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4, Object v5, Object v6, Object v7, Object v8, Object v9, Object v10, Object v11, Object v12, Object v13, Object v14, Object v15, Object v16, Object v17, Object v18, Object v19, Object v20, Object v21) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15, v16, v17, v18, v19, v20, v21));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4, Object v5, Object v6, Object v7, Object v8, Object v9, Object v10, Object v11, Object v12, Object v13, Object v14, Object v15, Object v16, Object v17, Object v18, Object v19, Object v20, Object v21, Object v22) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15, v16, v17, v18, v19, v20, v21, v22));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4, Object v5, Object v6, Object v7, Object v8, Object v9, Object v10, Object v11, Object v12, Object v13, Object v14, Object v15, Object v16, Object v17, Object v18, Object v19, Object v20, Object v21, Object v22, Object v23) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15, v16, v17, v18, v19, v20, v21, v22, v23));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4, Object v5, Object v6, Object v7, Object v8, Object v9, Object v10, Object v11, Object v12, Object v13, Object v14, Object v15, Object v16, Object v17, Object v18, Object v19, Object v20, Object v21, Object v22, Object v23, Object v24) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15, v16, v17, v18, v19, v20, v21, v22, v23, v24));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4, Object v5, Object v6, Object v7, Object v8, Object v9, Object v10, Object v11, Object v12, Object v13, Object v14, Object v15, Object v16, Object v17, Object v18, Object v19, Object v20, Object v21, Object v22, Object v23, Object v24, Object v25) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15, v16, v17, v18, v19, v20, v21, v22, v23, v24, v25));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4, Object v5, Object v6, Object v7, Object v8, Object v9, Object v10, Object v11, Object v12, Object v13, Object v14, Object v15, Object v16, Object v17, Object v18, Object v19, Object v20, Object v21, Object v22, Object v23, Object v24, Object v25, Object v26) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15, v16, v17, v18, v19, v20, v21, v22, v23, v24, v25, v26));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4, Object v5, Object v6, Object v7, Object v8, Object v9, Object v10, Object v11, Object v12, Object v13, Object v14, Object v15, Object v16, Object v17, Object v18, Object v19, Object v20, Object v21, Object v22, Object v23, Object v24, Object v25, Object v26, Object v27) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15, v16, v17, v18, v19, v20, v21, v22, v23, v24, v25, v26, v27));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4, Object v5, Object v6, Object v7, Object v8, Object v9, Object v10, Object v11, Object v12, Object v13, Object v14, Object v15, Object v16, Object v17, Object v18, Object v19, Object v20, Object v21, Object v22, Object v23, Object v24, Object v25, Object v26, Object v27, Object v28) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15, v16, v17, v18, v19, v20, v21, v22, v23, v24, v25, v26, v27, v28));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4, Object v5, Object v6, Object v7, Object v8, Object v9, Object v10, Object v11, Object v12, Object v13, Object v14, Object v15, Object v16, Object v17, Object v18, Object v19, Object v20, Object v21, Object v22, Object v23, Object v24, Object v25, Object v26, Object v27, Object v28, Object v29) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15, v16, v17, v18, v19, v20, v21, v22, v23, v24, v25, v26, v27, v28, v29));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4, Object v5, Object v6, Object v7, Object v8, Object v9, Object v10, Object v11, Object v12, Object v13, Object v14, Object v15, Object v16, Object v17, Object v18, Object v19, Object v20, Object v21, Object v22, Object v23, Object v24, Object v25, Object v26, Object v27, Object v28, Object v29, Object v30) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15, v16, v17, v18, v19, v20, v21, v22, v23, v24, v25, v26, v27, v28, v29, v30));
  }

  public static Seq<Object> of(Object v0, Object v1, Object v2, Object v3, Object v4, Object v5, Object v6, Object v7, Object v8, Object v9, Object v10, Object v11, Object v12, Object v13, Object v14, Object v15, Object v16, Object v17, Object v18, Object v19, Object v20, Object v21, Object v22, Object v23, Object v24, Object v25, Object v26, Object v27, Object v28, Object v29, Object v30, Object v31) {
    return PythonUtils.toSeq(Arrays.<Object>asList(v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15, v16, v17, v18, v19, v20, v21, v22, v23, v24, v25, v26, v27, v28, v29, v30, v31));
  }
}
