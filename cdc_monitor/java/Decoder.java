package cdcmonitor;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.api.java.UDF7;

/**
 * cdc-monitor's one decoder, a Java UDF (Spark's public API): (topic, key text, value text, an
 * Avro stage's error, detail and message, configuration) -> one struct of the record's decoded
 * facts and its verdicts, the columns the configuration asks for. Each value and key is parsed
 * once, in one streaming pass, and what the record alone shows is judged then (Verdicts). A value
 * in Avro's JSON encoding (AvroJson) is read, with its key, as the JSON converter would have written it.
 * decoding/decoder.py registers it and builds the configuration; decoding/events.py documents the columns.
 */
public final class Decoder implements UDF7<String, String, String, String, String, String, String, Row> {
    private static final long serialVersionUID = 1L;

    @Override
    public Row call(String topic, String key, String value, String preError, String preDetail, String preMessage,
                    String config) {
        DecoderConfig cfg = DecoderConfig.of(config);
        String avroJson = cfg.detectAvroJson && preError == null ? AvroJson.unwrappedValue(cfg, value) : null;
        Decoded d = avroJson == null ? new Decoded(cfg, topic == null ? "" : topic, key, value, preError, preDetail, preMessage)
                : new Decoded(cfg, topic == null ? "" : topic, AvroJson.unwrappedKey(cfg, key), avroJson, null, null, null);
        d.avroJson = avroJson != null;
        d.decode();
        d.derive();
        return d.row(Verdicts.judge(cfg, d));
    }

    /** {@code columns}: the columns this decoder can return; {@code rules}: the rules it judges; one per line. */
    public static void main(String[] args) {
        for (String c : args.length > 0 && args[0].equals("rules") ? Verdicts.CODES : Decoded.COLUMNS) {
            System.out.println(c);
        }
    }
}
