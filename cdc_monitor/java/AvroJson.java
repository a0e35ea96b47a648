package cdcmonitor;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Iterator;
import java.util.Map;

import com.fasterxml.jackson.core.StreamWriteFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.cfg.JsonNodeFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Avro's JSON encoding, as kafka-avro-console-consumer and kcat -s avro print a record, recognised
 * per record without --avro-json: a value (not the JSON converter's schema/payload wrapper) one of
 * whose members, or of whose {@code source}'s members, is a union written as Avro writes one: a
 * one-member object named by its branch, holding a value of the branch's type ({@code {"string": "x"}},
 * {@code {"long": 5}}, {@code {"<topic>.Value": {...}}}: a named type's branch is its dotted full
 * name). The JSON converter writes none: Debezium's envelope members and source fields are scalars,
 * row images and blocks of several members. Such a value, and its key, are read as --avro-json reads
 * them (avro/schemas.py, {@code unwrap_avro_json}: every union unwrapped, bytes as base64), numbers
 * as written.
 */
final class AvroJson {
    private AvroJson() {
    }

    // decimals as written (1.50 stays 1.50): no double on the way, no trailing zeros stripped
    private static final ObjectMapper TREES = JsonMapper.builder(JsonText.FACTORY.copy())
            .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
            .disable(JsonNodeFeature.STRIP_TRAILING_BIGDECIMAL_ZEROES)
            .enable(StreamWriteFeature.WRITE_BIGDECIMAL_AS_PLAIN)
            .build();

    /** The value's text as the JSON converter would have written it when it is Avro-JSON, else null. */
    static String unwrappedValue(DecoderConfig cfg, String value) {
        if (value == null || !mayHoldBranch(cfg, value)) {
            return null;
        }
        JsonNode doc = tree(value);
        if (!(doc instanceof ObjectNode) || (doc.has("schema") && doc.has("payload"))) {
            return null;
        }
        JsonNode source = doc.get("source");
        if (!holdsBranch(cfg, doc) && !(source instanceof ObjectNode && holdsBranch(cfg, source))) {
            return null;
        }
        return text(unwrap(cfg, doc));
    }

    /** An Avro-JSON value's key, read the same way (a key that is not a JSON object: as it is). */
    static String unwrappedKey(DecoderConfig cfg, String key) {
        JsonNode doc = key == null ? null : tree(key);
        return doc instanceof ObjectNode ? text(unwrap(cfg, doc)) : key;
    }

    /** Cheap, before any tree: does {@code text} hold {@code {"<a branch's name>":} anywhere. */
    private static boolean mayHoldBranch(DecoderConfig cfg, String text) {
        int n = text.length();
        for (int i = text.indexOf('{'); i >= 0 && i < n; i = text.indexOf('{', i + 1)) {
            int j = skipSpace(text, i + 1);
            if (j >= n || text.charAt(j) != '"') {
                continue;
            }
            int end = text.indexOf('"', j + 1);
            if (end < 0) {
                return false;
            }
            if (branchName(cfg, text, j + 1, end)) {
                int k = skipSpace(text, end + 1);
                if (k < n && text.charAt(k) == ':') {
                    return true;
                }
            }
        }
        return false;
    }

    /** Whether {@code text[from, to)} (a member's name) can name a union's branch: a dotted name or a
     * primitive branch's, without an escape. Read in place: no name is copied. */
    private static boolean branchName(DecoderConfig cfg, String text, int from, int to) {
        boolean dotted = false;
        for (int i = from; i < to; i++) {
            char c = text.charAt(i);
            if (c == '\\') {
                return false;
            }
            dotted |= c == '.';
        }
        if (dotted) {
            return true;
        }
        for (String branch : cfg.avroBranches.keySet()) {
            if (branch.length() == to - from && text.regionMatches(from, branch, 0, to - from)) {
                return true;
            }
        }
        return false;
    }

    private static int skipSpace(String text, int i) {
        while (i < text.length() && Character.isWhitespace(text.charAt(i))) {
            i++;
        }
        return i;
    }

    private static boolean holdsBranch(DecoderConfig cfg, JsonNode object) {
        for (JsonNode member : object) {
            if (isBranch(cfg, member)) {
                return true;
            }
        }
        return false;
    }

    /** A one-member object named by a union branch, holding a value of the branch's JSON type. */
    private static boolean isBranch(DecoderConfig cfg, JsonNode node) {
        if (!(node instanceof ObjectNode) || node.size() != 1) {
            return false;
        }
        Map.Entry<String, JsonNode> only = node.properties().iterator().next();
        String type = cfg.avroBranches.get(only.getKey());
        JsonNode v = only.getValue();
        if (type == null) {  // a named type: a record (an object), an enum or a fixed (a string)
            return only.getKey().indexOf('.') >= 0 && (v.isObject() || v.isTextual());
        }
        return switch (type) {
            case "boolean" -> v.isBoolean();
            case "integer" -> v.isIntegralNumber();
            case "number" -> v.isNumber() || v.isTextual();  // (NaN and the infinities as text)
            case "string" -> v.isTextual();
            case "array" -> v.isArray();
            case "object" -> v.isObject();
            default -> false;
        };
    }

    /** avro/schemas.py's {@code unwrap_avro_json}, over a tree. */
    private static JsonNode unwrap(DecoderConfig cfg, JsonNode node) {
        if (node instanceof ObjectNode object) {
            if (object.size() == 1) {
                Map.Entry<String, JsonNode> only = object.properties().iterator().next();
                String branch = only.getKey();
                JsonNode inner = only.getValue();
                if (branch.equals("bytes") && inner.isTextual()) {
                    return latin1Base64(inner);
                }
                if (cfg.avroBranches.containsKey(branch) || branch.indexOf('.') >= 0) {
                    return unwrap(cfg, inner);
                }
            }
            ObjectNode out = TREES.getNodeFactory().objectNode();
            for (Iterator<Map.Entry<String, JsonNode>> it = object.properties().iterator(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                out.set(e.getKey(), unwrap(cfg, e.getValue()));
            }
            return out;
        }
        if (node instanceof ArrayNode array) {
            ArrayNode out = TREES.getNodeFactory().arrayNode(array.size());
            for (JsonNode v : array) {
                out.add(unwrap(cfg, v));
            }
            return out;
        }
        return node;
    }

    /** Avro-JSON bytes (one character per byte) as base64, as the JSON converter writes bytes; text
     * with a character above U+00FF is no such bytes: kept. */
    private static JsonNode latin1Base64(JsonNode text) {
        String s = text.textValue();
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) > 0xFF) {
                return text;
            }
        }
        return TREES.getNodeFactory().textNode(Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.ISO_8859_1)));
    }

    private static JsonNode tree(String text) {
        try {
            return TREES.readTree(text);
        } catch (IOException | RuntimeException ex) {
            return null;  // not JSON: the decoder says so
        }
    }

    private static String text(JsonNode node) {
        try {
            return TREES.writeValueAsString(node);
        } catch (IOException ex) {
            throw new IllegalStateException(ex);
        }
    }
}
