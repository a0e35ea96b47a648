package cdcmonitor;

import java.io.IOException;
import java.io.StringWriter;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonFactoryBuilder;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.json.JsonReadFeature;

/**
 * The JSON reading the decoder shares: Spark's JSON options (single quotes and NaN/Infinity
 * allowed, leading zeros and control characters in strings not), and a value's text as a string
 * column holds it: a string as its characters, anything else as compact JSON with every number
 * as the producer wrote it ({@code 1.50} stays {@code 1.50}; whitespace between tokens is not data).
 */
final class JsonText {
    private JsonText() {
    }

    static final JsonFactory FACTORY = new JsonFactoryBuilder()
            .enable(JsonReadFeature.ALLOW_SINGLE_QUOTES)
            .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
            .streamReadConstraints(StreamReadConstraints.builder().maxStringLength(Integer.MAX_VALUE).build())
            .build();

    /** The current value as a string column holds it (null for JSON null); the parser ends on its last token. */
    static String text(JsonParser p) throws IOException {
        JsonToken t = p.currentToken();
        if (t == JsonToken.VALUE_NULL) {
            return null;
        }
        if (t == JsonToken.VALUE_STRING) {
            return p.getText();
        }
        if (t.isScalarValue()) {
            return scalar(p, t);
        }
        StringWriter out = new StringWriter(64);
        try (JsonGenerator g = FACTORY.createGenerator(out)) {
            copy(p, g);
        }
        return out.toString();
    }

    /**
     * The current value as written in {@code source} (an embedded schema: matched and compiled, never
     * compared as text), a string as its characters, with a hash of it in {@code hash[0]} that ignores
     * the whitespace between tokens: the same schema written with other whitespace is one version. An
     * object or array is skipped by the parser (no token's text is copied) and hashed as its span of
     * {@code source}. The parser ends on its last token.
     */
    static String raw(JsonParser p, String source, long[] hash) throws IOException {
        JsonToken t = p.currentToken();
        if (t == JsonToken.VALUE_NULL) {
            return null;
        }
        if (!t.isStructStart()) {
            String text = t == JsonToken.VALUE_STRING ? p.getText() : scalar(p, t);
            hash[0] = mix(feed(OFFSET, text));
            return text;
        }
        int from = (int) p.currentTokenLocation().getCharOffset();
        p.skipChildren();
        int to = (int) p.currentLocation().getCharOffset();
        hash[0] = mix(spanHash(source, from, to));
        return source.substring(from, to);
    }

    /** FNV-1a over {@code s[from, to)}, JSON whitespace outside strings left out. */
    private static long spanHash(String s, int from, int to) {
        long h = OFFSET;
        boolean inString = false;
        for (int i = from; i < to; i++) {
            char c = s.charAt(i);
            if (inString) {
                if (c == '\\' && i + 1 < to) {
                    h = ((h ^ c) * PRIME ^ s.charAt(++i)) * PRIME;
                    continue;
                }
                inString = c != '"';
            } else if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
                continue;
            } else {
                inString = c == '"';
            }
            h = (h ^ c) * PRIME;
        }
        return h;
    }

    private static final long OFFSET = 0xcbf29ce484222325L;
    private static final long PRIME = 0x100000001b3L;

    private static long feed(long h, String s) {
        for (int i = 0; i < s.length(); i++) {
            h = (h ^ s.charAt(i)) * PRIME;
        }
        return (h ^ 0xFFFF) * PRIME;
    }

    private static long mix(long h) {
        h ^= h >>> 33;
        h *= 0xff51afd7ed558ccdL;
        h ^= h >>> 33;
        return h;
    }

    private static String scalar(JsonParser p, JsonToken t) throws IOException {
        if (t == JsonToken.VALUE_NUMBER_FLOAT && nonNumeric(p.getText())) {
            return "\"" + p.getText() + "\"";  // NaN and Infinity: written as strings, as Spark writes them
        }
        return p.getText();  // a number as written; true, false
    }

    private static boolean nonNumeric(String s) {
        return s.equals("NaN") || s.endsWith("Infinity");
    }

    /**
     * Like {@link #text}, for a value read from {@code source}: an object or array already written
     * compactly (no whitespace between its tokens, as Kafka's JsonConverter writes) is its span of the
     * source, taken as it is; another is copied compactly.
     */
    static String text(JsonParser p, String source) throws IOException {
        JsonToken t = p.currentToken();
        if (source == null || !t.isStructStart()) {
            return text(p);
        }
        int from = (int) p.currentTokenLocation().getCharOffset();
        p.skipChildren();
        int to = (int) p.currentLocation().getCharOffset();
        if (compact(source, from, to)) {
            return source.substring(from, to);
        }
        try (JsonParser again = FACTORY.createParser(source.substring(from, to))) {
            again.nextToken();
            return text(again);
        }
    }

    /** No whitespace outside strings, and no number Spark's JSON options write otherwise (NaN, Infinity). */
    private static boolean compact(String s, int from, int to) {
        boolean inString = false;
        for (int i = from; i < to; i++) {
            char c = s.charAt(i);
            if (inString) {
                if (c == '\\') {
                    i++;
                } else if (c == '"') {
                    inString = false;
                }
            } else if (c == '"') {
                inString = true;
            } else if (c <= ' ' || c == '\'' || c == 'N' || c == 'I') {
                return false;  // whitespace, a single-quoted string, NaN or Infinity
            }
        }
        return true;
    }

    /**
     * A flat JSON object (string, integer, boolean and null values) as Spark's
     * {@code to_json(try_parse_json(text))} writes it: fields sorted, no whitespace; null for any
     * other text (nested values, fractions, escapes, repeated names: Spark canonicalises those).
     */
    static String canonicalFlatObject(String text) {
        if (text == null || text.isEmpty() || text.charAt(0) != '{') {
            return null;
        }
        java.util.TreeMap<String, String> fields = new java.util.TreeMap<>();
        try (JsonParser p = FACTORY.createParser(text)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return null;
            }
            JsonToken t;
            while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                if (!plain(name)) {
                    return null;
                }
                t = p.nextToken();
                String v;
                switch (t) {
                    case VALUE_STRING -> {
                        v = p.getText();
                        if (!plain(v)) {
                            return null;
                        }
                        v = '"' + v + '"';
                    }
                    case VALUE_NUMBER_INT -> v = p.getBigIntegerValue().toString();
                    case VALUE_TRUE -> v = "true";
                    case VALUE_FALSE -> v = "false";
                    case VALUE_NULL -> v = "null";
                    default -> {
                        return null;
                    }
                }
                if (fields.put(name, v) != null) {
                    return null;
                }
            }
            if (t != JsonToken.END_OBJECT || p.nextToken() != null) {
                return null;
            }
        } catch (IOException | RuntimeException e) {
            return null;
        }
        StringBuilder b = new StringBuilder(text.length()).append('{');
        for (java.util.Map.Entry<String, String> f : fields.entrySet()) {
            if (b.length() > 1) {
                b.append(',');
            }
            b.append('"').append(f.getKey()).append("\":").append(f.getValue());
        }
        return b.append('}').toString();
    }

    /** Text written the same by every JSON writer: ASCII without control characters, quotes or backslashes. */
    private static boolean plain(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < ' ' || c > '~' || c == '"' || c == '\\') {
                return false;
            }
        }
        return true;
    }

    /** The current value and its children, compact, numbers as written. */
    static void copy(JsonParser p, JsonGenerator g) throws IOException {
        int depth = 0;
        JsonToken t = p.currentToken();
        while (true) {
            switch (t) {
                case START_OBJECT -> {
                    g.writeStartObject();
                    depth++;
                }
                case START_ARRAY -> {
                    g.writeStartArray();
                    depth++;
                }
                case END_OBJECT -> {
                    g.writeEndObject();
                    depth--;
                }
                case END_ARRAY -> {
                    g.writeEndArray();
                    depth--;
                }
                case FIELD_NAME -> g.writeFieldName(p.currentName());
                case VALUE_STRING -> g.writeString(p.getTextCharacters(), p.getTextOffset(), p.getTextLength());
                case VALUE_NUMBER_INT -> g.writeNumber(p.getText());
                case VALUE_NUMBER_FLOAT -> {
                    if (nonNumeric(p.getText())) {
                        g.writeString(p.getText());
                    } else {
                        g.writeNumber(p.getText());
                    }
                }
                case VALUE_TRUE -> g.writeBoolean(true);
                case VALUE_FALSE -> g.writeBoolean(false);
                case VALUE_NULL -> g.writeNull();
                default -> g.writeNull();
            }
            if (depth == 0) {
                return;
            }
            t = p.nextToken();
        }
    }

    /** A long as Spark's try_cast(text AS BIGINT) reads it: ASCII whitespace trimmed, an optional sign, digits; else null. */
    static Long toLong(String s) {
        if (s == null) {
            return null;
        }
        int from = 0;
        int to = s.length();
        while (from < to && s.charAt(from) <= ' ') {
            from++;
        }
        while (to > from && s.charAt(to - 1) <= ' ') {
            to--;
        }
        if (from == to) {
            return null;
        }
        boolean negative = false;
        char c0 = s.charAt(from);
        if (c0 == '-' || c0 == '+') {
            negative = c0 == '-';
            from++;
            if (from == to) {
                return null;
            }
        }
        long v = 0;
        for (int i = from; i < to; i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '9') {
                return null;
            }
            int d = c - '0';
            // accumulate negatively so Long.MIN_VALUE fits
            if (v < (Long.MIN_VALUE + d) / 10) {
                return null;
            }
            v = v * 10 - d;
        }
        if (!negative) {
            if (v == Long.MIN_VALUE) {
                return null;
            }
            v = -v;
        }
        return v;
    }

    /** A non-negative integer position part: digits only (no sign, no space) that fit a long; else null. */
    static Long unsigned(String s) {
        if (s == null || s.isEmpty()) {
            return null;
        }
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '9') {
                return null;
            }
        }
        return toLong(s);
    }

    /** The first {@code n} characters (code points) of {@code s}, as Spark's substring counts them. */
    static String prefix(String s, int n) {
        if (s == null) {
            return null;
        }
        int cps = s.codePointCount(0, s.length());
        return cps <= n ? s : s.substring(0, s.offsetByCodePoints(0, n));
    }
}
