import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * What a purpose-built decoder could cost per record (benchmarks/jvm_decode.py): one streaming
 * Jackson pass over each kcat line and one over its value and key, picking out what cdc-monitor's
 * decoder reads (envelope fields; op, ts_ms, source, transaction, status, id, event_count; the
 * embedded schema's and row images' raw spans, hashed; the one-document check), on one thread, no
 * Spark. Prints the first run's seconds (a cold JVM) and records/s of the best run.
 */
public final class DecodeFloor {
    private static final JsonFactory JSON = new JsonFactory();

    public static void main(String[] args) throws Exception {
        int runs = Integer.parseInt(args[0]);
        List<String> lines = new ArrayList<>();
        for (int i = 1; i < args.length; i++) {
            for (String line : Files.readAllLines(Path.of(args[i]), StandardCharsets.UTF_8)) {
                if (!line.isBlank()) {
                    lines.add(line);
                }
            }
        }
        double best = Double.MAX_VALUE;
        double first = 0;
        long sink = 0;
        for (int r = 0; r < runs; r++) {
            long t = System.nanoTime();
            for (String line : lines) {
                sink += line(line);
            }
            double took = (System.nanoTime() - t) / 1e9;
            first = r == 0 ? took : first;
            best = Math.min(best, took);
        }
        System.out.printf("{\"records\": %d, \"first_seconds\": %.3f, \"best_seconds\": %.3f, \"records_per_s\": %.0f, \"sink\": %d}%n",
                lines.size(), first, best, lines.size() / best, sink);
    }

    /** The kcat line: its fields, then the value and the key parsed. */
    static long line(String text) throws Exception {
        long h = 0;
        String key = null;
        String value = null;
        try (JsonParser p = JSON.createParser(text)) {
            p.nextToken();
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken t = p.nextToken();
                switch (name) {
                    case "topic" -> h += p.getText().hashCode();
                    case "partition", "offset", "ts", "broker" -> h += t == JsonToken.VALUE_NUMBER_INT ? p.getLongValue() : 0;
                    case "key" -> key = t == JsonToken.VALUE_STRING ? p.getText() : null;
                    case "payload" -> value = t == JsonToken.VALUE_STRING ? p.getText() : null;
                    default -> p.skipChildren();
                }
            }
        }
        if (value != null) {
            h += document(value, true);
        }
        if (key != null) {
            h += document(key, false);
        }
        return h;
    }

    /** A value or key: top-level schema (raw span hashed) and payload walked; exactly one document. */
    static long document(String text, boolean value) throws Exception {
        long h = 0;
        try (JsonParser p = JSON.createParser(text)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return -1;
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                p.nextToken();
                if (name.equals("schema")) {
                    h += span(p, text);
                } else if (name.equals("payload") && p.currentToken() == JsonToken.START_OBJECT) {
                    h += value ? payload(p, text) : span(p, text);
                } else {
                    p.skipChildren();
                }
            }
            if (p.nextToken() != null) {
                return -2;  // more than one document
            }
        }
        return h;
    }

    static long payload(JsonParser p, String text) throws Exception {
        long h = 0;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken t = p.nextToken();
            switch (name) {
                case "before", "after" -> h += span(p, text);
                case "source", "transaction" -> h += fields(p);
                case "op", "status", "id" -> h += t == JsonToken.VALUE_STRING ? p.getText().hashCode() : 0;
                case "ts_ms", "ts_us", "ts_ns", "event_count" -> h += t == JsonToken.VALUE_NUMBER_INT ? p.getLongValue() : 0;
                default -> p.skipChildren();
            }
        }
        return h;
    }

    /** An object's scalar fields as text (the struct from_json builds), nested values skipped. */
    static long fields(JsonParser p) throws Exception {
        if (p.currentToken() != JsonToken.START_OBJECT) {
            return 0;
        }
        long h = 0;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            h += p.currentName().hashCode();
            JsonToken t = p.nextToken();
            if (t.isScalarValue()) {
                h += p.getText().hashCode();
            } else {
                p.skipChildren();
            }
        }
        return h;
    }

    /** A nested value's raw text, hashed (the embedded schema's version, a row image kept as text). */
    static long span(JsonParser p, String text) throws Exception {
        int from = (int) p.currentTokenLocation().getCharOffset();
        p.skipChildren();
        int to = (int) p.currentLocation().getCharOffset();
        return text.substring(from, Math.max(from, to)).hashCode();
    }
}
