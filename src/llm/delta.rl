/* Ragel machines for the hot streamed-delta events (see delta.h).
 *
 * Each machine is a JSON grammar narrowed to one event shape: members the
 * decoders read are named, any other member must have a scalar value, and
 * strings, numbers and literals are exactly what jansson accepts (strict UTF-8
 * as RFC 3629 defines it, no control characters, the JSON escapes, integers
 * that fit in 64 bits). A member the decoders read that appears twice (jansson
 * keeps the last), a key with escapes or non-ASCII bytes, a real number, a
 * lone UTF-16 surrogate escape, a nested value where a scalar is expected:
 * the machine fails and the caller
 * falls back to jansson. */
#include "llm/delta.h"

#include <stdint.h>
#include <string.h>

/* Bits of the members seen, for the duplicate check. */
enum {
    B_CHOICES, B_ERROR, B_USAGE, B_OBJECT,
    B_C_INDEX, B_C_DELTA, B_C_FINISH,
    B_CONTENT, B_RCONTENT, B_REASONING, B_REFUSAL, B_TOOLS,
    B_T_INDEX, B_T_ID, B_T_FUNCTION, B_F_NAME, B_F_ARGS,
    B_U_IN, B_U_OUT, B_U_PDET, B_U_CDET, B_U_CACHED, B_U_RTOKENS, B_ID, B_MODEL,
    B_A_IN, B_A_OUT, B_A_CW, B_A_CR, B_M_USAGE, B_MESSAGE, B_BLOCK, B_CB_DATA, B_D_STOP,
    B_TYPE, B_INDEX, B_DELTA, B_D_TYPE, B_D_TEXT, B_D_THINK, B_D_SIG, B_D_PARTIAL,
    B_COUNT
};
_Static_assert(B_COUNT <= sizeof(unsigned long) * 8, "the seen bits fit in an unsigned long");

#define DS_DUP(b)                                                                              \
    do {                                                                                       \
        if (seen & (1ul << (b))) {                                                             \
            bad = 1;                                                                           \
            goto out;                                                                          \
        }                                                                                      \
        seen |= 1ul << (b);                                                                    \
    } while (0)

#define DS_SET(k)                                                                              \
    do {                                                                                       \
        d->s[k].p = (const char *)sp;                                                          \
        d->s[k].n = (size_t)(p - sp);                                                          \
        d->s[k].set = 1;                                                                       \
        d->s[k].esc = (unsigned char)sesc;                                                     \
    } while (0)

/* Bytes that stand for themselves in a JSON string: printable ASCII but the
 * quote and the backslash. */
static const unsigned char ds_plain[256] = {
    ['\x20'] = 1, ['\x21'] = 1, ['\x23' ... '\x5b'] = 1, ['\x5d' ... '\x7f'] = 1};

/* The end of the run of plain bytes at p: eight bytes at a time while none is
 * a control byte, a quote, a backslash or non-ASCII, then byte by byte. */
static const unsigned char *ds_skip_plain(const unsigned char *p, const unsigned char *pe)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    while (pe - p >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        uint64_t q = v ^ (ones * '"'), b = v ^ (ones * '\\');
        /* exact tests: a byte below 0x20, a zero byte of q or b, a high bit */
        uint64_t stop = ((v - ones * 0x20) & ~v) | ((q - ones) & ~q) | ((b - ones) & ~b) | v;
        if (stop & highs)
            break;
        p += 8;
    }
    while (p < pe && ds_plain[*p])
        p++;
    return p;
}

%%{
    machine json_common;
    alphtype unsigned char;

    action s_open { sp = p + 1; sesc = 0; }
    action s_esc { sesc = 1; }
    # a run of plain bytes is skipped in a C loop: long strings cost a table
    # lookup a byte, not a transition
    action s_run {
        fexec ds_skip_plain(p + 1, pe);
    }

    ws = [ \t\r\n]*;
    tail = 0x80..0xbf;
    utf8 = 0xc2..0xdf tail
         | 0xe0 0xa0..0xbf tail
         | (0xe1..0xec | 0xee..0xef) tail tail
         | 0xed 0x80..0x9f tail
         | 0xf0 0x90..0xbf tail tail
         | 0xf1..0xf3 tail tail tail
         | 0xf4 0x80..0x8f tail tail;
    plain = 0x20..0x7f - ["\\];
    # UTF-16 surrogates only as a high-low pair, as jansson requires wherever the
    # string stands (in members the decoders skip too)
    hi_sur = [dD] [89abAB] xdigit{2};
    lo_sur = [dD] [c-fC-F] xdigit{2};
    escape = '\\' @s_esc ( ["\\/bfnrt] | 'u' ( xdigit{4} - ( [dD] [89a-fA-F] xdigit{2} ) )
                          | 'u' hi_sur '\\u' lo_sur );
    str = '"' @s_open ( plain @s_run | utf8 | escape )* '"';

    num = '-'? ( '0' | [1-9] [0-9]{0,17} );
    nonstr = num | 'true' | 'false' | 'null';
    scalar = str | nonstr;

    # a key the decoders do not read: plain ASCII only
    okey = '"' ( 0x20..0x7f - ["\\] )* '"';
    # an integer whose value is kept (nacc, nneg reset by the key's action)
    inum = ( '-' @{ nneg = 1; } )? ( ( '0' | [1-9] [0-9]{0,17} ) ${ nacc = nacc * 10 + (unsigned long long)(fc - '0'); } );
    # an object of scalars (usage details)
    flat = '{' ws ( okey ws ':' ws scalar ( ws ',' ws okey ws ':' ws scalar )* )? ws '}';
    # a value the decoders do not read: a scalar, an object of scalars, an empty array
    skip = scalar | flat | '[' ws ']';
    # small non-negative integers (indexes)
    idx = '0' | [1-9] [0-9]{0,6};
}%%

%%{
    machine oa;
    include json_common;

    action t_index_0 { d->tc_index = 0; d->has_tc_index = 1; }
    action t_index_d { d->tc_index = d->tc_index * 10 + (fc - '0'); }

    fn_m = '"name"' @{ DS_DUP(B_F_NAME); } ws ':' ws ( str @{ DS_SET(AC_DS_TC_NAME); } | nonstr )
         | '"arguments"' @{ DS_DUP(B_F_ARGS); } ws ':' ws ( str @{ DS_SET(AC_DS_TC_ARGS); } | 'null' )
         | ( okey - ( '"name"' | '"arguments"' ) ) ws ':' ws scalar;
    fn = '{' ws ( fn_m ( ws ',' ws fn_m )* )? ws '}';

    tc_m = '"index"' @{ DS_DUP(B_T_INDEX); } ws ':' ws ( idx >t_index_0 $t_index_d )
         | '"id"' @{ DS_DUP(B_T_ID); } ws ':' ws ( str @{ DS_SET(AC_DS_TC_ID); } | nonstr )
         | '"function"' @{ DS_DUP(B_T_FUNCTION); } ws ':' ws fn
         | ( okey - ( '"index"' | '"id"' | '"function"' ) ) ws ':' ws scalar;
    tc = '{' ws ( tc_m ( ws ',' ws tc_m )* )? ws '}' @{ d->has_tool_call = 1; };

    delta_m = '"content"' @{ DS_DUP(B_CONTENT); } ws ':' ws
                  ( str @{ DS_SET(AC_DS_CONTENT); } | 'null' )
            | '"reasoning_content"' @{ DS_DUP(B_RCONTENT); } ws ':' ws
                  ( str @{ DS_SET(AC_DS_REASONING_CONTENT); } | 'null' )
            | '"reasoning"' @{ DS_DUP(B_REASONING); } ws ':' ws
                  ( str @{ DS_SET(AC_DS_REASONING); } | nonstr )
            | '"refusal"' @{ DS_DUP(B_REFUSAL); } ws ':' ws
                  ( str @{ DS_SET(AC_DS_REFUSAL); } | 'null' )
            | '"tool_calls"' @{ DS_DUP(B_TOOLS); } ws ':' ws ( '[' ws tc ws ']' | 'null' )
            | ( okey - ( '"content"' | '"reasoning_content"' | '"reasoning"' | '"refusal"'
                       | '"tool_calls"' ) ) ws ':' ws scalar;
    delta = '{' ws ( delta_m ( ws ',' ws delta_m )* )? ws '}';

    choice_m = '"index"' @{ DS_DUP(B_C_INDEX); } ws ':' ws '0'
             | '"delta"' @{ DS_DUP(B_C_DELTA); } ws ':' ws ( delta | 'null' )
             | '"finish_reason"' @{ DS_DUP(B_C_FINISH); } ws ':' ws
                   ( str @{ DS_SET(AC_DS_FINISH); } | 'null' )
             | ( okey - ( '"index"' | '"delta"' | '"finish_reason"' ) ) ws ':' ws scalar;
    choice = '{' ws ( choice_m ( ws ',' ws choice_m )* )? ws '}';

    # a counter of the usage details: an integer is kept, other scalars are not read
    pd_m = '"cached_tokens"' @{ DS_DUP(B_U_CACHED); nacc = 0; nneg = 0; } ws ':' ws
               ( inum %{ d->cached_tokens = nneg ? -(long long)nacc : (long long)nacc; d->has_cached = 1; }
               | 'true' | 'false' | 'null' | str )
         | ( okey - '"cached_tokens"' ) ws ':' ws scalar;
    pdet = '{' ws ( pd_m ( ws ',' ws pd_m )* )? ws '}';
    cd_m = '"reasoning_tokens"' @{ DS_DUP(B_U_RTOKENS); nacc = 0; nneg = 0; } ws ':' ws
               ( inum %{ d->reasoning_tokens = nneg ? -(long long)nacc : (long long)nacc; d->has_rtokens = 1; }
               | 'true' | 'false' | 'null' | str )
         | ( okey - '"reasoning_tokens"' ) ws ':' ws scalar;
    cdet = '{' ws ( cd_m ( ws ',' ws cd_m )* )? ws '}';

    u_m = '"prompt_tokens"' @{ DS_DUP(B_U_IN); nacc = 0; nneg = 0; } ws ':' ws
              ( inum %{ d->in_tokens = nneg ? -(long long)nacc : (long long)nacc; d->has_in = 1; }
              | 'null' )
        | '"completion_tokens"' @{ DS_DUP(B_U_OUT); nacc = 0; nneg = 0; } ws ':' ws
              ( inum %{ d->out_tokens = nneg ? -(long long)nacc : (long long)nacc; d->has_out = 1; }
              | 'null' )
        | '"prompt_tokens_details"' @{ DS_DUP(B_U_PDET); } ws ':' ws ( pdet | scalar )
        | '"completion_tokens_details"' @{ DS_DUP(B_U_CDET); } ws ':' ws ( cdet | scalar )
        | ( okey - ( '"prompt_tokens"' | '"completion_tokens"' | '"prompt_tokens_details"'
                   | '"completion_tokens_details"' ) ) ws ':' ws ( scalar | flat );
    usage = '{' ws ( u_m ( ws ',' ws u_m )* )? ws '}' @{ d->has_usage = 1; };

    top_m = '"choices"' @{ DS_DUP(B_CHOICES); } ws ':' ws '[' ws choice? ws ']'
          | '"error"' @{ DS_DUP(B_ERROR); } ws ':' ws 'null'
          | '"usage"' @{ DS_DUP(B_USAGE); } ws ':' ws ( 'null' | usage )
          | '"object"' @{ DS_DUP(B_OBJECT); } ws ':' ws ( str @{ DS_SET(AC_DS_OBJECT); } | nonstr )
          | '"id"' @{ DS_DUP(B_ID); } ws ':' ws ( str @{ DS_SET(AC_DS_ID); } | nonstr )
          | '"model"' @{ DS_DUP(B_MODEL); } ws ':' ws ( str @{ DS_SET(AC_DS_MODEL); } | nonstr )
          | ( okey - ( '"choices"' | '"error"' | '"usage"' | '"object"' | '"x_groq"' | '"id"'
                     | '"model"' ) )
                ws ':' ws scalar;

    main := ws '{' ws ( top_m ( ws ',' ws top_m )* )? ws '}' ws;

    write data noerror noentry;
}%%

int ac_delta_scan_openai(const char *data, size_t n, ac_delta *d)
{
    const unsigned char *p = (const unsigned char *)data, *pe = p + n, *eof = pe;
    const unsigned char *sp = p;
    int cs, sesc = 0, bad = 0, nneg = 0;
    unsigned long long nacc = 0;
    unsigned long seen = 0;
    (void)eof;
    memset(d, 0, sizeof *d);
    %% write init;
    %% write exec;
out:
    return !bad && cs >= oa_first_final && p == pe;
}

%%{
    machine an;
    include json_common;

    action index_0 { d->index = 0; }
    action index_d { d->index = d->index * 10 + (fc - '0'); }

    # usage counters: an integer is kept, other scalars are not read
    acount = ( inum %{ *cnt = nneg ? -(long long)nacc : (long long)nacc; *has = 1; }
             | 'true' | 'false' | 'null' | str );
    au_m = '"input_tokens"' @{ DS_DUP(B_A_IN); nacc = 0; nneg = 0; cnt = &u->in; has = &u->has_in; }
               ws ':' ws acount
         | '"output_tokens"' @{ DS_DUP(B_A_OUT); nacc = 0; nneg = 0; cnt = &u->out; has = &u->has_out; }
               ws ':' ws acount
         | '"cache_creation_input_tokens"' @{ DS_DUP(B_A_CW); nacc = 0; nneg = 0; cnt = &u->cwrite;
                                              has = &u->has_cwrite; }
               ws ':' ws acount
         | '"cache_read_input_tokens"' @{ DS_DUP(B_A_CR); nacc = 0; nneg = 0; cnt = &u->cread;
                                          has = &u->has_cread; }
               ws ':' ws acount
         | ( okey - ( '"input_tokens"' | '"output_tokens"' | '"cache_creation_input_tokens"'
                    | '"cache_read_input_tokens"' ) ) ws ':' ws ( scalar | flat );
    ausage = '{' ws ( au_m ( ws ',' ws au_m )* )? ws '}' @{ u->set = 1; };

    am_m = '"id"' @{ DS_DUP(B_ID); } ws ':' ws ( str @{ DS_SET(AC_DS_ID); } | nonstr )
         | '"model"' @{ DS_DUP(B_MODEL); } ws ':' ws ( str @{ DS_SET(AC_DS_MODEL); } | nonstr )
         | '"usage"' @{ DS_DUP(B_M_USAGE); u = &d->msg_usage; } ws ':' ws ( ausage | scalar )
         | ( okey - ( '"id"' | '"model"' | '"usage"' ) ) ws ':' ws skip;
    amsg = '{' ws ( am_m ( ws ',' ws am_m )* )? ws '}' @{ d->has_message = 1; };

    cb_m = '"type"' @{ DS_DUP(B_D_TYPE); } ws ':' ws ( str @{ DS_SET(AC_DS_DTYPE); } | nonstr )
         | '"text"' @{ DS_DUP(B_D_TEXT); } ws ':' ws ( str @{ DS_SET(AC_DS_TEXT); } | nonstr )
         | '"thinking"' @{ DS_DUP(B_D_THINK); } ws ':' ws ( str @{ DS_SET(AC_DS_THINK); } | nonstr )
         | '"signature"' @{ DS_DUP(B_D_SIG); } ws ':' ws ( str @{ DS_SET(AC_DS_SIG); } | nonstr )
         | '"data"' @{ DS_DUP(B_CB_DATA); } ws ':' ws ( str @{ DS_SET(AC_DS_DATA); } | nonstr )
         | '"id"' @{ DS_DUP(B_T_ID); } ws ':' ws ( str @{ DS_SET(AC_DS_TC_ID); } | nonstr )
         | '"name"' @{ DS_DUP(B_F_NAME); } ws ':' ws ( str @{ DS_SET(AC_DS_TC_NAME); } | nonstr )
         | ( okey - ( '"type"' | '"text"' | '"thinking"' | '"signature"' | '"data"' | '"id"'
                    | '"name"' ) ) ws ':' ws skip;
    ablock = '{' ws ( cb_m ( ws ',' ws cb_m )* )? ws '}' @{ d->has_block = 1; };

    ad_m = '"type"' @{ DS_DUP(B_D_TYPE); } ws ':' ws str @{ DS_SET(AC_DS_DTYPE); }
         | '"text"' @{ DS_DUP(B_D_TEXT); } ws ':' ws ( str @{ DS_SET(AC_DS_TEXT); } | nonstr )
         | '"thinking"' @{ DS_DUP(B_D_THINK); } ws ':' ws ( str @{ DS_SET(AC_DS_THINK); } | nonstr )
         | '"signature"' @{ DS_DUP(B_D_SIG); } ws ':' ws ( str @{ DS_SET(AC_DS_SIG); } | nonstr )
         | '"partial_json"' @{ DS_DUP(B_D_PARTIAL); } ws ':' ws
               ( str @{ DS_SET(AC_DS_PARTIAL); } | nonstr )
         | '"stop_reason"' @{ DS_DUP(B_D_STOP); } ws ':' ws
               ( str @{ DS_SET(AC_DS_FINISH); } | nonstr )
         | ( okey - ( '"type"' | '"text"' | '"thinking"' | '"signature"' | '"partial_json"'
                    | '"stop_reason"' ) )
               ws ':' ws scalar;
    adelta = '{' ws ( ad_m ( ws ',' ws ad_m )* )? ws '}' @{ d->has_delta = 1; };

    at_m = '"type"' @{ DS_DUP(B_TYPE); } ws ':' ws str @{ DS_SET(AC_DS_TYPE); }
         | '"index"' @{ DS_DUP(B_INDEX); } ws ':' ws ( idx >index_0 $index_d ) @{ d->has_index = 1; }
         | '"delta"' @{ DS_DUP(B_DELTA); } ws ':' ws adelta
         | '"content_block"' @{ DS_DUP(B_BLOCK); } ws ':' ws ablock
         | '"message"' @{ DS_DUP(B_MESSAGE); } ws ':' ws amsg
         | '"usage"' @{ DS_DUP(B_USAGE); u = &d->usage; } ws ':' ws ( ausage | scalar )
         | ( okey - ( '"type"' | '"index"' | '"delta"' | '"content_block"' | '"message"'
                    | '"usage"' ) ) ws ':' ws scalar;

    main := ws '{' ws ( at_m ( ws ',' ws at_m )* )? ws '}' ws;

    write data noerror noentry;
}%%

int ac_delta_scan_anthropic(const char *data, size_t n, ac_delta *d)
{
    const unsigned char *p = (const unsigned char *)data, *pe = p + n, *eof = pe;
    const unsigned char *sp = p;
    int cs, sesc = 0, bad = 0, nneg = 0;
    unsigned long long nacc = 0;
    unsigned long seen = 0;
    ac_dusage *u = &d->usage;
    long long *cnt = NULL;
    int *has = NULL;
    (void)eof;
    memset(d, 0, sizeof *d);
    %% write init;
    %% write exec;
out:
    return !bad && cs >= an_first_final && p == pe;
}

static int hexval(int c)
{
    return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

static unsigned hex4(const char *s)
{
    return (unsigned)(hexval(s[0]) << 12 | hexval(s[1]) << 8 | hexval(s[2]) << 4 | hexval(s[3]));
}

long ac_delta_unescape(const ac_dspan *s, char *out)
{
    const char *p = s->p, *e = s->p + s->n;
    char *o = out;
    if (!s->esc) {
        memcpy(out, p, s->n);
        out[s->n] = '\0';
        return (long)s->n;
    }
    while (p < e) {
        const char *bs = memchr(p, '\\', (size_t)(e - p));
        size_t run = (size_t)((bs ? bs : e) - p);
        memcpy(o, p, run);
        o += run;
        p += run;
        if (!bs)
            break;
        char c = p[1];
        p += 2;
        switch (c) {
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            /* the machine checked the four hex digits */
            unsigned v = hex4(p);
            p += 4;
            if (v >= 0xdc00 && v <= 0xdfff)
                return -1;
            if (v >= 0xd800 && v <= 0xdbff) {
                if (e - p < 6 || p[0] != '\\' || p[1] != 'u')
                    return -1;
                unsigned lo = hex4(p + 2);
                if (lo < 0xdc00 || lo > 0xdfff)
                    return -1;
                p += 6;
                v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
            }
            if (v < 0x80) {
                *o++ = (char)v;
            } else if (v < 0x800) {
                *o++ = (char)(0xc0 | v >> 6);
                *o++ = (char)(0x80 | (v & 0x3f));
            } else if (v < 0x10000) {
                *o++ = (char)(0xe0 | v >> 12);
                *o++ = (char)(0x80 | ((v >> 6) & 0x3f));
                *o++ = (char)(0x80 | (v & 0x3f));
            } else {
                *o++ = (char)(0xf0 | v >> 18);
                *o++ = (char)(0x80 | ((v >> 12) & 0x3f));
                *o++ = (char)(0x80 | ((v >> 6) & 0x3f));
                *o++ = (char)(0x80 | (v & 0x3f));
            }
            break;
        }
        default: /* '"', '\\', '/' */
            *o++ = c;
            break;
        }
    }
    *o = '\0';
    return (long)(o - out);
}

int ac_delta_is(const ac_dspan *s, const char *lit)
{
    size_t n = strlen(lit);
    return s->set && !s->esc && s->n == n && memcmp(s->p, lit, n) == 0;
}
