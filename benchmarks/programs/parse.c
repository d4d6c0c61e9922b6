/* Text parsing: a tokenizer, number parsing, escaping, a state machine. */
#include <stddef.h>
#include <stdint.h>

enum kind { END, NUMBER, IDENT, PUNCT, STRING };
struct token { enum kind kind; const char *start; int len; double number; };

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static int is_alpha(char c) { return ((c | 32) >= 'a' && (c | 32) <= 'z') || c == '_'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

const char *next_token(const char *p, struct token *t) {
    while (is_space(*p)) p++;
    t->start = p;
    if (!*p) { t->kind = END; t->len = 0; return p; }
    if (is_digit(*p)) {
        double v = 0;
        while (is_digit(*p)) v = v * 10 + (*p++ - '0');
        if (*p == '.') { double f = 0.1; for (p++; is_digit(*p); p++, f *= 0.1) v += (*p - '0') * f; }
        t->kind = NUMBER; t->number = v;
    } else if (is_alpha(*p)) {
        while (is_alpha(*p) || is_digit(*p)) p++;
        t->kind = IDENT;
    } else if (*p == '"') {
        for (p++; *p && *p != '"'; p++) if (*p == '\\' && p[1]) p++;
        if (*p) p++;
        t->kind = STRING;
    } else { p++; t->kind = PUNCT; }
    t->len = (int)(p - t->start);
    return p;
}

long parse_long(const char *s, const char **end) {
    int neg = 0;
    long v = 0;
    while (is_space(*s)) s++;
    if (*s == '-' || *s == '+') neg = *s++ == '-';
    while (is_digit(*s)) v = v * 10 + (*s++ - '0');
    if (end) *end = s;
    return neg ? -v : v;
}

size_t escape_json(const char *in, size_t n, char *out) {
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)in[i];
        switch (c) {
        case '"': out[o++] = '\\'; out[o++] = '"'; break;
        case '\\': out[o++] = '\\'; out[o++] = '\\'; break;
        case '\n': out[o++] = '\\'; out[o++] = 'n'; break;
        case '\t': out[o++] = '\\'; out[o++] = 't'; break;
        default:
            if (c < 0x20) {
                out[o++] = '\\'; out[o++] = 'u'; out[o++] = '0'; out[o++] = '0';
                out[o++] = hex[c >> 4]; out[o++] = hex[c & 15];
            } else out[o++] = (char)c;
        }
    }
    return o;
}

int count_lines(const char *s, size_t n, int *longest) {
    int lines = 0, cur = 0, best = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\n') { lines++; if (cur > best) best = cur; cur = 0; }
        else cur++;
    }
    *longest = best > cur ? best : cur;
    return lines + (cur > 0);
}

/* a CSV field splitter: quoted fields, doubled quotes */
int split_csv(const char *line, const char **fields, int *lens, int max) {
    int n = 0;
    const char *p = line;
    while (*p && n < max) {
        if (*p == '"') {
            const char *s = ++p;
            while (*p && !(*p == '"' && p[1] != '"')) p += *p == '"' ? 2 : 1;
            fields[n] = s; lens[n++] = (int)(p - s);
            if (*p) p++;
        } else {
            const char *s = p;
            while (*p && *p != ',') p++;
            fields[n] = s; lens[n++] = (int)(p - s);
        }
        if (*p == ',') p++;
    }
    return n;
}
