package cdcmonitor;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * A Kafka Connect schema embedded in a key or value (JsonConverter with schemas), compiled once per
 * distinct schema text into one check per field path, and each record's payload judged against it:
 * non-optional fields null or absent (inside arrays of structs too, element by element), values of
 * a JSON type the field's type never takes, int8/int16/int32 values outside their width, schema
 * names that are not Avro full names, and a key schema not named after its topic. Tolerates the
 * dialects seen in the wild: {"field","type","optional"} entries, and {"name","index","schema":{...}}
 * (seed 004's key); column values wrapped as {"value": x} in row images (seed 004).
 */
final class ConnectSchema {
    static final String ARRAY_ITEMS = "[]";
    private static final Pattern AVRO_FULLNAME = Pattern.compile("^[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*$");
    private static final Pattern NOT_AVRO_CHAR = Pattern.compile("[^A-Za-z0-9_.]");
    private static final String DECIMAL_LOGICAL = "org.apache.kafka.connect.data.Decimal";
    private static final ObjectMapper MAPPER = new ObjectMapper(JsonText.FACTORY);
    private static final Map<Id, ConnectSchema> COMPILED = new ConcurrentHashMap<>();
    private static final int MAX_COMPILED = 2048;

    /** One field path's check. */
    record Field(String[] path, String dotted, String type, boolean optional, boolean unwrap, Set<String> allowed,
                 long[] range) {
    }

    final List<Field> fields = new ArrayList<>();
    final String invalidNames;  // "" when every name is a valid Avro full name
    final String name;  // the root's name, or null

    private ConnectSchema(JsonNode schema, Set<String> skip, boolean unwrapTop) {
        walk(schema, new String[0], skip, unwrapTop);
        List<String> bad = new ArrayList<>();
        names(schema, bad);
        invalidNames = String.join(", ", bad);
        JsonNode n = schema.get("name");
        name = n != null && n.isTextual() ? n.asText() : null;
    }

    /** A compiled schema's identity: the hash of its text (JsonText.raw: whitespace aside), its length, key or value. */
    private record Id(long hash, int length, boolean key) {
    }

    /**
     * The compiled schema of {@code text} (null when it is not a JSON object), cached by {@code hash}
     * (its version, JsonText.raw's): looked up in constant time, however long the schema.
     */
    static ConnectSchema of(String text, long hash, boolean key, Set<String> skip) {
        if (text == null) {
            return null;
        }
        Id cacheKey = new Id(hash, text.length(), key);
        ConnectSchema c = COMPILED.get(cacheKey);
        if (c == null) {
            JsonNode schema;
            try {
                schema = MAPPER.readTree(text);
            } catch (Exception e) {
                schema = null;
            }
            c = schema != null && schema.isObject() ? new ConnectSchema(schema, skip, key) : NONE;
            if (COMPILED.size() > MAX_COMPILED) {
                COMPILED.clear();
            }
            COMPILED.put(cacheKey, c);
        }
        return c == NONE ? null : c;
    }

    private static final ConnectSchema NONE = new ConnectSchema();

    private ConnectSchema() {
        invalidNames = "";
        name = null;
    }

    private static boolean bool(JsonNode v, boolean dflt) {
        if (v == null) {
            return dflt;
        }
        if (v.isBoolean()) {
            return v.asBoolean();
        }
        if (v.isTextual()) {
            return v.asText().strip().toLowerCase(Locale.ROOT).equals("true");
        }
        return dflt;
    }

    private static String text(JsonNode v) {
        return v == null || v.isNull() ? null : v.isTextual() ? v.asText() : v.toString();
    }

    private void walk(JsonNode s, String[] path, Set<String> skip, boolean unwrapTop) {
        JsonNode entries = s.get("fields");
        if (entries == null || !entries.isArray()) {
            return;
        }
        for (JsonNode raw : entries) {
            if (!raw.isObject()) {
                continue;
            }
            String fieldName;
            JsonNode fs;
            if (raw.has("schema") && raw.get("schema").isObject() && !raw.has("type")) {
                String f = text(raw.get("field"));
                fieldName = f == null || f.isEmpty() ? text(raw.get("name")) : f;
                fs = raw.get("schema");
            } else {
                fieldName = text(raw.get("field"));
                fs = raw;
            }
            if (fieldName == null || fieldName.isEmpty()) {
                continue;
            }
            JsonNode t = fs.get("type");
            String type = (t == null ? "" : t.isTextual() ? t.asText() : t.toString()).toLowerCase(Locale.ROOT);
            String[] p = java.util.Arrays.copyOf(path, path.length + 1);
            p[path.length] = fieldName;
            boolean optional = bool(fs.get("optional"), false) || skip.contains(String.join(".", p));
            boolean wrapped = path.length > 0 ? path[0].equals("before") || path[0].equals("after") : unwrapTop;
            JsonNode logicalNode = fs.get("name");
            String logical = logicalNode != null && logicalNode.isTextual() ? logicalNode.asText() : null;
            boolean inArray = List.of(p).contains(ARRAY_ITEMS);
            fields.add(new Field(p, String.join(".", p).replace("." + ARRAY_ITEMS, ARRAY_ITEMS), type, optional,
                    wrapped && !type.equals("struct"), allowed(type, logical), inArray ? null : range(type)));
            if (type.equals("struct")) {
                walk(fs, p, skip, unwrapTop);
            }
            JsonNode items = fs.get("items");
            if (type.equals("array") && items != null && items.isObject()
                    && text(items.get("type")) != null && text(items.get("type")).toLowerCase(Locale.ROOT).equals("struct")) {
                String[] q = java.util.Arrays.copyOf(p, p.length + 1);
                q[p.length] = ARRAY_ITEMS;  // the fields of struct elements (MongoDB's truncatedArrays)
                walk(items, q, skip, unwrapTop);
            }
        }
    }

    /** The JSON kinds a value of a Connect type may take (NUMBER: a number beyond a long, or with a fraction or exponent). */
    private static Set<String> allowed(String type, String logical) {
        if (type.equals("bytes") && DECIMAL_LOGICAL.equals(logical)) {
            return Set.of("STRING", "BIGINT", "NUMBER");  // base64 text, or decimal.format=NUMERIC
        }
        return switch (type) {
            case "int8", "int16", "int32", "int64" -> Set.of("BIGINT");
            case "float32", "float64", "float", "double" -> Set.of("BIGINT", "NUMBER", "STRING");  // NaN as a string
            case "boolean" -> Set.of("BOOLEAN");
            case "string", "bytes" -> Set.of("STRING");
            case "struct" -> Set.of("OBJECT");
            case "map" -> Set.of("OBJECT", "ARRAY");
            case "array" -> Set.of("ARRAY");
            default -> Set.of();
        };
    }

    private static long[] range(String type) {
        return switch (type) {
            case "int8" -> new long[] {Byte.MIN_VALUE, Byte.MAX_VALUE};
            case "int16" -> new long[] {Short.MIN_VALUE, Short.MAX_VALUE};
            case "int32" -> new long[] {Integer.MIN_VALUE, Integer.MAX_VALUE};
            default -> null;
        };
    }

    private static void names(JsonNode s, List<String> bad) {
        if (s == null || !s.isObject()) {
            return;
        }
        JsonNode n = s.get("name");
        if (n != null && n.isTextual() && (s.has("type") || s.has("fields")) && !AVRO_FULLNAME.matcher(n.asText()).find()) {
            bad.add(n.asText());
        }
        for (String key : new String[] {"fields", "items", "keys", "values", "schema"}) {
            JsonNode v = s.get(key);
            if (v != null && v.isArray()) {
                for (JsonNode x : v) {
                    names(x, bad);
                }
            } else if (v != null && v.isObject()) {
                names(v, bad);
            }
        }
    }

    static String kind(JsonNode v) {
        if (v == null || v.isNull() || v.isMissingNode()) {
            return "VOID";
        }
        if (v.isObject()) {
            return "OBJECT";
        }
        if (v.isArray()) {
            return "ARRAY";
        }
        if (v.isTextual()) {
            return "STRING";
        }
        if (v.isBoolean()) {
            return "BOOLEAN";
        }
        if (v.isIntegralNumber() && v.canConvertToLong()) {
            return "BIGINT";
        }
        return v.isNumber() ? "NUMBER" : "STRING";
    }

    /** The key schema's name is {@code <topic>.Key}, each invalid Avro character as _. */
    boolean namedAfter(String topic) {
        Named last = lastNamed;
        if (last == null || !last.topic.equals(topic)) {
            last = new Named(topic, name == null || NOT_AVRO_CHAR.matcher(name).replaceAll("_")
                    .equals(NOT_AVRO_CHAR.matcher(topic).replaceAll("_") + ".Key"));
            lastNamed = last;
        }
        return last.named;
    }

    /** The last topic this key schema was compared with, and the answer: a topic's records ask again and again. */
    private record Named(String topic, boolean named) {
    }

    private volatile Named lastNamed;

    /** (null fields, type mismatches, out-of-range integers) of one payload, each path once, in schema order. */
    List<Set<String>> judge(JsonNode payload) {
        Set<String> nulls = new LinkedHashSet<>();
        Set<String> types = new LinkedHashSet<>();
        Set<String> ranges = new LinkedHashSet<>();
        for (Field f : fields) {
            List<JsonNode> parents = new ArrayList<>();
            collect(payload, f.path, 0, f.path.length - 1, parents);
            for (JsonNode parent : parents) {
                if (parent == null || parent.isNull() || (f.path.length > 1 && inArray(f) && !parent.isObject())) {
                    continue;
                }
                JsonNode node = parent.isObject() ? parent.get(f.path[f.path.length - 1]) : null;
                if (f.unwrap && node != null && node.isObject()) {
                    node = node.get("value");
                }
                String k = kind(node);
                if (k.equals("VOID")) {
                    if (!f.optional) {
                        nulls.add(f.dotted);
                    }
                    continue;
                }
                if (!f.allowed.isEmpty() && !f.allowed.contains(k)) {
                    types.add(f.dotted);
                }
                if (f.range != null && k.equals("BIGINT") && (node.asLong() < f.range[0] || node.asLong() > f.range[1])) {
                    ranges.add(f.dotted + " (" + f.type + ") = " + node.asLong());
                }
            }
        }
        return List.of(nulls, types, ranges);
    }

    private static boolean inArray(Field f) {
        for (String s : f.path) {
            if (s.equals(ARRAY_ITEMS)) {
                return true;
            }
        }
        return false;
    }

    /** The values at path[0..end) below node (absent: null), every element of an array at an ARRAY_ITEMS step. */
    private static void collect(JsonNode node, String[] path, int i, int end, List<JsonNode> out) {
        if (i == end) {
            out.add(node);
            return;
        }
        if (node == null || node.isNull()) {
            out.add(null);
            return;
        }
        if (path[i].equals(ARRAY_ITEMS)) {
            if (node.isArray()) {
                for (JsonNode element : node) {
                    collect(element, path, i + 1, end, out);
                }
            }
            return;
        }
        collect(node.isObject() ? node.get(path[i]) : null, path, i + 1, end, out);
    }
}
