/*
 * lexer.rl - the spec language's lexer, a Ragel scanner.
 *
 * Turns the whole spec source into an array of tokens with line and column.
 * Comments run from '#' to the end of the line. Names may contain dots
 * (llm.delta, agent.COMPLETED). Numbers keep their unit suffix so the
 * parser can report a bad unit at the right place.
 */
#include <stdlib.h>
#include <string.h>

#include "spec.h"
#include "util/grow.h"

%%{
    machine spec_lexer;
    alphtype unsigned char;

    action nl { line++; line_start = p + 1; }

    ident = [A-Za-z_] [A-Za-z0-9_]* ( '.' [A-Za-z_] [A-Za-z0-9_]* )*;
    number = [0-9]+ ('.' [0-9]+)? [A-Za-z]*;
    strchar = [^"\\\n] | '\\' [^\n];
    string = '"' strchar* '"';

    main := |*
        [ \t\r\f\v]+;
        '\n' => nl;
        '#' [^\n]*;
        ident   => { tok(TK_IDENT, ts, te); };
        number  => { tok(TK_NUMBER, ts, te); };
        string  => { tok_string(ts, te); };
        '"' strchar* => { bad(ts, "unterminated string (strings end on the same line)"); };
        '{'  => { tok(TK_LBRACE, ts, te); };
        '}'  => { tok(TK_RBRACE, ts, te); };
        '['  => { tok(TK_LBRACK, ts, te); };
        ']'  => { tok(TK_RBRACK, ts, te); };
        '('  => { tok(TK_LPAREN, ts, te); };
        ')'  => { tok(TK_RPAREN, ts, te); };
        ','  => { tok(TK_COMMA, ts, te); };
        '=='  => { tok(TK_CMP, ts, te); };
        '!='  => { tok(TK_CMP, ts, te); };
        '<' '='? => { tok(TK_CMP, ts, te); };
        '>' '='? => { tok(TK_CMP, ts, te); };
        '='  => { tok(TK_EQ, ts, te); };
        '->' => { tok(TK_ARROW, ts, te); };
        '/'  => { tok(TK_SLASH, ts, te); };
        '!'  => { tok(TK_BANG, ts, te); };
        '&&' => { tok(TK_AND, ts, te); };
        '||' => { tok(TK_OR, ts, te); };
        '*'  => { tok(TK_STAR, ts, te); };
        (0x80..0xff)+ => { bad(ts, "non-ASCII text outside a comment or string (names are ASCII letters, digits, '_' and '.')"); };
        any  => { bad_char(ts); };
    *|;
}%%

%% write data nofinal noerror noentry;

typedef struct lexer {
    ac_spec *spec;
    ac_token *toks;
    size_t n, cap;
    int last_line;
    int oom;
} lexer;

static void push(lexer *lx, int kind, int line, int col, const char *text, size_t len)
{
    if (lx->oom)
        return;
    if (ac_grow((void **)&lx->toks, &lx->cap, lx->n + 1, sizeof *lx->toks)) {
        lx->oom = 1;
        return;
    }
    ac_token *t = &lx->toks[lx->n++];
    t->kind = kind;
    t->line = line;
    t->col = col;
    t->first_on_line = line != lx->last_line;
    t->text = text;
    t->len = len;
    lx->last_line = line;
}

/* Unescapes a "..." literal: \" \\ \n \t; other escapes are errors. */
static void push_string(lexer *lx, int line, int col, const char *s, const char *e)
{
    size_t n = (size_t)(e - s);
    char *out = ac_spec_alloc(lx->spec, n);
    size_t o = 0;
    if (!out) {
        lx->oom = 1;
        return;
    }
    for (const char *q = s + 1; q < e - 1; q++) {
        if (*q != '\\') {
            out[o++] = *q;
            continue;
        }
        q++;
        switch (*q) {
        case '"': out[o++] = '"'; break;
        case '\\': out[o++] = '\\'; break;
        case 'n': out[o++] = '\n'; break;
        case 't': out[o++] = '\t'; break;
        default:
            ac_spec_diag(lx->spec, 1, line, col + (int)(q - s) - 1,
                         "unknown escape '\\%c' in string (use \\\" \\\\ \\n \\t)", *q);
            break;
        }
    }
    out[o] = 0;
    push(lx, TK_STRING, line, col, out, o);
}

ac_token *ac_spec_lex(ac_spec *spec, size_t *n_out)
{
    lexer lx = {spec, NULL, 0, 0, 0, 0};
    const unsigned char *base = (const unsigned char *)spec->src;
    const unsigned char *p = base, *pe = base + spec->src_len, *eof = pe;
    const unsigned char *ts = NULL, *te = NULL;
    const unsigned char *line_start = base;
    int cs, act, line = 1;
    int nerr = 0;
    (void)act;

#define COL(ptr) ((int)((ptr) - line_start) + 1)
#define tok(kind, s, e)                                                                        \
    push(&lx, (kind), line, COL(s), ac_spec_strdup(spec, (const char *)(s), (size_t)((e) - (s))), \
         (size_t)((e) - (s)))
#define bad(s, msg)                                                                            \
    do {                                                                                       \
        if (nerr++ < AC_SPEC_MAX_ERRORS)                                                       \
            ac_spec_diag(spec, 1, line, COL(s), "%s", (msg));                                  \
        push(&lx, TK_ERROR, line, COL(s), "", 0);                                              \
    } while (0)
#define bad_char(s)                                                                            \
    do {                                                                                       \
        unsigned char c_ = *(s);                                                               \
        if (nerr++ < AC_SPEC_MAX_ERRORS) {                                                     \
            if (c_ >= 0x20 && c_ < 0x7f)                                                       \
                ac_spec_diag(spec, 1, line, COL(s), "unexpected character '%c'", c_);          \
            else                                                                               \
                ac_spec_diag(spec, 1, line, COL(s), "unexpected control byte 0x%02x", c_);             \
        }                                                                                      \
        push(&lx, TK_ERROR, line, COL(s), "", 0);                                              \
    } while (0)
#define tok_string(s, e) push_string(&lx, line, COL(s), (const char *)(s), (const char *)(e))

    %% write init;
    %% write exec;

    (void)cs;
    push(&lx, TK_EOF, line, COL(pe), "", 0);
    if (lx.oom) {
        free(lx.toks);
        *n_out = 0;
        return NULL;
    }
    /* Move the token array into the arena so the spec owns it. */
    ac_token *out = ac_spec_alloc(spec, lx.n * sizeof *out);
    if (out)
        memcpy(out, lx.toks, lx.n * sizeof *out);
    free(lx.toks);
    *n_out = out ? lx.n : 0;
    return out;
#undef COL
#undef tok
#undef bad
#undef bad_char
#undef tok_string
}
