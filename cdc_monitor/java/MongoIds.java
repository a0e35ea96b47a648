package cdcmonitor;

import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.Base64;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * MongoDB ids as one text per value, whatever extended-JSON mode wrote them. Debezium's MongoDB
 * connector (JsonSerialization) writes the key's id in relaxed extended JSON ({@code 10001},
 * {@code {"$date":"2026-01-01T00:00:00Z"}}) and the document in canonical extended JSON
 * ({@code {"$numberLong":"10001"}}, {@code {"$date":{"$numberLong":"1767225600000"}}}), so
 * key_payload_mismatch compares the two through {@link #id}.
 */
final class MongoIds {
    private MongoIds() {
    }

    private static final Pattern SPACE = Pattern.compile("\\s");
    private static final Pattern NUMBER = Pattern.compile("\\{\"\\$number(?:Long|Int|Double|Decimal)\":\"([^\"]*)\"\\}");
    private static final Pattern DATE_ISO = Pattern.compile("^\\{\"\\$date\":\"([^\"]+)\"\\}$");
    private static final Pattern DATE_MS = Pattern.compile("^\\{\"\\$date\":(-?\\d+)\\}$");
    private static final Pattern BINARY = Pattern.compile(
            "^\\{\"\\$binary\":\\{\"base64\":\"([^\"]*)\",\"subType\":\"([0-9a-fA-F]{1,2})\"\\}\\}$");
    private static final Pattern BINARY_LEGACY = Pattern.compile(
            "^\\{\"\\$binary\":\"([^\"]*)\",\"\\$type\":\"([0-9a-fA-F]{1,2})\"\\}$");
    private static final Pattern UUID = Pattern.compile("^\\{\"\\$uuid\":\"([0-9a-fA-F-]{32,36})\"\\}$");
    private static final Pattern QUOTED = Pattern.compile("^\"(.*)\"$");

    /** A key's id text (quoted when a string) as the document's id text is compared. */
    static String keyId(String text) {
        return text == null ? null : id(QUOTED.matcher(SPACE.matcher(text).replaceAll("")).replaceAll("$1"));
    }

    /**
     * The id text without whitespace, numbers without their type wrapper (also inside compound ids),
     * dates as {@code date:<ms>}, binary and UUID values as {@code bin:<subtype>:<hex>}; {@code $oid}
     * and strings are the same text in both modes.
     */
    static String id(String text) {
        if (text == null) {
            return null;
        }
        String t = NUMBER.matcher(SPACE.matcher(text).replaceAll("")).replaceAll("$1");
        Matcher m = DATE_MS.matcher(t);
        if (m.find()) {
            return "date:" + m.group(1);
        }
        m = DATE_ISO.matcher(t);
        if (m.find()) {
            Long ms = isoMillis(m.group(1));
            if (ms != null) {
                return "date:" + ms;
            }
        }
        for (Pattern p : new Pattern[] {BINARY, BINARY_LEGACY}) {
            m = p.matcher(t);
            if (m.find()) {
                byte[] data = base64(m.group(1));
                if (data != null) {
                    String sub = m.group(2).toLowerCase(Locale.ROOT);
                    return "bin:" + (sub.length() < 2 ? "0" + sub : sub) + ":" + hex(data);
                }
            }
        }
        m = UUID.matcher(t);
        if (m.find()) {
            return "bin:04:" + m.group(1).replace("-", "").toUpperCase(Locale.ROOT);
        }
        return t;
    }

    private static byte[] base64(String s) {
        try {
            return Base64.getDecoder().decode(s);
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    private static String hex(byte[] data) {
        StringBuilder b = new StringBuilder(data.length * 2);
        for (byte x : data) {
            b.append(Character.toUpperCase(Character.forDigit((x >> 4) & 0xF, 16)));
            b.append(Character.toUpperCase(Character.forDigit(x & 0xF, 16)));
        }
        return b.toString();
    }

    /** An ISO-8601 time in milliseconds (a time without an offset is UTC, the session's zone); null when not one. */
    private static Long isoMillis(String s) {
        try {
            return Instant.parse(s).toEpochMilli();
        } catch (DateTimeParseException e) {
            // an offset other than Z, no offset, or a date alone
        }
        try {
            return OffsetDateTime.parse(s).toInstant().toEpochMilli();
        } catch (DateTimeParseException e) {
            // no offset
        }
        try {
            return LocalDateTime.parse(s).toInstant(ZoneOffset.UTC).toEpochMilli();
        } catch (DateTimeParseException e) {
            // a date alone
        }
        try {
            return LocalDate.parse(s).atStartOfDay(ZoneOffset.UTC).toInstant().toEpochMilli();
        } catch (DateTimeParseException e) {
            return null;
        }
    }
}
