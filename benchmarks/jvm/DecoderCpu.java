import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * cdc-monitor's decoder alone (benchmarks/decode.py): the operators jar's {@code cdcmonitor.Decoder}
 * called on every record of kcat captures, on one thread, no Spark around it. Its configuration is the
 * measured tree's (a file). Prints, as JSON, the records and the best run's CPU per record of this
 * thread (microseconds): CPU time, not wall time, so another process on the machine moves it little.
 * Usage: DecoderCpu CONFIG_FILE RUNS CAPTURE...
 */
public final class DecoderCpu {
    public static void main(String[] args) throws Exception {
        String config = Files.readString(Path.of(args[0]));
        int runs = Integer.parseInt(args[1]);
        ObjectMapper json = new ObjectMapper();
        List<String[]> records = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            for (String line : Files.readAllLines(Path.of(args[i]), StandardCharsets.UTF_8)) {
                if (!line.isBlank()) {
                    JsonNode n = json.readTree(line);
                    records.add(new String[] {n.path("topic").asText(), text(n.get("key")), text(n.get("payload"))});
                }
            }
        }
        cdcmonitor.Decoder decoder = new cdcmonitor.Decoder();
        ThreadMXBean cpu = ManagementFactory.getThreadMXBean();
        double best = Double.MAX_VALUE;
        long sink = 0;
        for (int r = 0; r < runs; r++) {
            long started = cpu.getCurrentThreadCpuTime();
            for (String[] x : records) {
                sink += decoder.call(x[0], x[1], x[2], null, null, null, config).size();
            }
            best = Math.min(best, (cpu.getCurrentThreadCpuTime() - started) / 1e3 / records.size());
        }
        System.out.printf("{\"records\": %d, \"cpu_us\": %.2f, \"fields\": %d}%n", records.size(), best, sink / runs / records.size());
    }

    private static String text(JsonNode n) {
        return n == null || n.isNull() ? null : n.asText();
    }
}
