/*
 * script.c - the scripted LLM provider: assistant turns from JSON Lines,
 * streamed as the same events a real provider posts (llm.started, deltas,
 * llm.completed or llm.failed). Used by `agentc demo`, tests and
 * deterministic runs; no network.
 *
 * One turn per line, every field optional:
 *   {"content": "...", "reasoning": "...", "tool_calls": [{"id", "name",
 *    "arguments"}], "finish_reason": "...", "usage": {"input", "output"},
 *    "error": {"status": 503, "message": "...", "retryable": true,
 *              "retry_after_ms": 10}}
 * Each session walks the turns in order; a turn with "error" is consumed
 * like any other. Running out of turns is a non-retryable failure. A
 * one-off completion (a compaction summary) consumes the next turn too: its
 * content is the reply.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "context/conversation.h"
#include "io/file.h"
#include "io/loop.h"
#include "llm/provider.h"
#include "session/sink.h"
#include "util/toolname.h"

#define SCRIPT_CHUNK 12 /* bytes of text per streamed delta */

typedef struct script_call {
    struct script_call *next;
    uint64_t id;
    ac_session *s;
    json_t *steps; /* array of [event index, payload] */
    size_t step;
    size_t at; /* in a text step: the bytes of its text posted so far (0: none) */
    uint64_t timer;
    uint16_t origin; /* of the llm_request effect */
    struct script_provider *p;
    /* one-off completion: done(done_ud, ok, text) instead of posting */
    ac_llm_done_fn done;
    void *done_ud;
    int ok;
    char *text;
} script_call;

typedef struct script_provider {
    ac_provider base;
    ac_engine *e;
    json_t *turns;
    int delay_ms;
    uint64_t next_id;
    script_call *calls;
} script_provider;

static void call_unlink_free(script_provider *p, script_call *c)
{
    for (script_call **pp = &p->calls; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    json_decref(c->steps);
    free(c->text);
    free(c);
}

static void tick(void *ud);

static void schedule(script_provider *p, script_call *c)
{
    c->timer = ac_loop_timer(ac_engine_loop(p->e), p->delay_ms, tick, c);
}

static script_provider *provider_of(script_call *c)
{
    return c->p;
}

/* The session's next scripted turn: its cursor lives in the provider's slot of the session. */
static size_t next_turn(ac_session *s)
{
    void **slot = ac_session_provider_slot(s);
    if (!*slot) {
        if (!(*slot = calloc(1, sizeof(size_t))))
            return SIZE_MAX;                        /* no memory: answered as "no more turns" */
        *(size_t *)*slot = ac_session_turn_base(s); /* a restored session goes on */
    }
    return (*(size_t *)*slot)++;
}

static void script_release(ac_provider *base, void *state)
{
    (void)base;
    free(state);
}

static void tick(void *ud)
{
    script_call *c = ud;
    script_provider *p = provider_of(c);
    c->timer = 0;
    if (c->done) {
        ac_llm_done_fn done = c->done;
        void *done_ud = c->done_ud;
        int ok = c->ok;
        char *text = c->text;
        c->text = NULL;
        call_unlink_free(p, c);
        done(done_ud, ok, text ? text : "");
        free(text);
        return;
    }
    json_t *step = json_array_get(c->steps, c->step);
    if (!step) {
        call_unlink_free(p, c);
        return;
    }
    uint16_t ev = (uint16_t)json_integer_value(json_array_get(step, 0));
    json_t *payload = json_array_get(step, 1);
    if (json_array_size(step) > 2) { /* a text streamed in pieces: the next one, typed */
        const char *text = json_string_value(json_object_get(payload, "text"));
        size_t n = json_string_length(json_object_get(payload, "text")), at = c->at;
        size_t k = n - at < SCRIPT_CHUNK ? n - at : SCRIPT_CHUNK;
        while (at + k < n && ((unsigned char)text[at + k] & 0xC0) == 0x80)
            k++; /* do not split a UTF-8 sequence */
        ac_session_enqueue_delta(
            c->s, ev, ac_delta_kind_of(json_string_value(json_object_get(payload, "kind"))),
            text + at, k, c->origin);
        c->at = at + k < n ? at + k : 0;
    } else {
        ac_session_enqueue(c->s, ev, json_incref(payload), 0, c->origin);
    }
    if (!c->at)
        c->step++;
    if (c->step >= json_array_size(c->steps)) {
        call_unlink_free(p, c);
        return;
    }
    schedule(p, c);
}

/* Steps hold the event's index, resolved once here rather than per post. */
static void add_step(script_call *c, const char *ev, json_t *payload)
{
    json_array_append_new(c->steps, json_pack("[i o]", (int)ac_engine_event_index(c->p->e, ev),
                                              payload ? payload : json_object()));
}

/* One step for the whole text: tick posts it SCRIPT_CHUNK bytes (never half a UTF-8 sequence)
 * at a time, each a typed llm.delta {"kind": kind, "text": piece}. */
static void add_text_deltas(script_call *c, const char *kind, const char *text)
{
    if (*text)
        json_array_append_new(c->steps, json_pack("[i {s:s, s:s} b]",
                                                  (int)ac_engine_event_index(c->p->e, "llm.delta"),
                                                  "kind", kind, "text", text, 1));
}

static int script_known_tool(void *conv, const char *display)
{
    return ac_conv_find_tool_def(conv, display) != NULL;
}

static uint64_t script_start(ac_provider *base, ac_session *s, const ac_llm_call_opts *opts)
{
    script_provider *p = (script_provider *)base;
    script_call *c = calloc(1, sizeof *c);
    if (!c)
        return 0;
    c->s = s;
    c->p = p;
    c->origin = opts ? opts->origin : 0;
    c->id = ++p->next_id;
    c->steps = json_array();
    size_t idx = next_turn(s);
    json_t *turn = json_array_get(p->turns, idx);
    if (!turn) {
        char msg[160];
        snprintf(msg, sizeof msg, "the script has no more turns (all %zu used)",
                 json_array_size(p->turns));
        add_step(c, "llm.failed",
                 json_pack("{s:s, s:b, s:s}", "class", "script", "retryable", 0, "message", msg));
    } else if (json_object_get(turn, "error")) {
        json_t *err = json_object_get(turn, "error");
        json_t *f = json_pack("{s:s, s:b, s:s}", "class", "http", "retryable",
                              json_is_true(json_object_get(err, "retryable")), "message",
                              json_string_value(json_object_get(err, "message"))
                                  ? json_string_value(json_object_get(err, "message"))
                                  : "scripted failure");
        json_t *st = json_object_get(err, "status");
        if (json_is_integer(st))
            json_object_set(f, "status", st);
        json_t *ra = json_object_get(err, "retry_after_ms");
        if (json_is_integer(ra))
            json_object_set(f, "retry_after_ms", ra);
        if (json_is_string(json_object_get(err, "partial"))) {
            add_step(c, "llm.started", NULL);
            add_text_deltas(c, "text", json_string_value(json_object_get(err, "partial")));
        }
        add_step(c, "llm.failed", f);
    } else {
        add_step(c, "llm.started", NULL);
        const char *reasoning = json_string_value(json_object_get(turn, "reasoning"));
        const char *content = json_string_value(json_object_get(turn, "content"));
        if (reasoning)
            add_text_deltas(c, "reasoning", reasoning);
        if (content)
            add_text_deltas(c, "text", content);
        json_t *calls = json_object_get(turn, "tool_calls");
        json_t *out_calls = json_array();
        size_t i;
        json_t *tc;
        json_array_foreach(calls, i, tc)
        {
            const char *id = json_string_value(json_object_get(tc, "id"));
            const char *name = json_string_value(json_object_get(tc, "name"));
            const char *args = json_string_value(json_object_get(tc, "arguments"));
            char gen[32], display[160];
            /* a turn may name a toolkit tool as the model would, "prefix__tool" */
            if (name && strstr(name, "__") &&
                ac_toolname_from_wire(name, script_known_tool, (void *)ac_session_conv(s), display,
                                      sizeof display) == 1)
                name = display;
            if (!id) {
                snprintf(gen, sizeof gen, "call_%zu_%zu", idx + 1, i + 1);
                id = gen;
            }
            add_step(c, "llm.delta",
                     json_pack("{s:s, s:i, s:s, s:s, s:s}", "kind", "tool_call", "index", (int)i,
                               "id", id, "name", name ? name : "", "text", args ? args : ""));
            json_array_append_new(out_calls,
                                  json_pack("{s:s, s:s, s:s}", "id", id, "name", name ? name : "",
                                            "arguments", args ? args : "{}"));
        }
        const char *finish = json_string_value(json_object_get(turn, "finish_reason"));
        json_t *done =
            json_pack("{s:s, s:o, s:s}", "content", content ? content : "", "tool_calls", out_calls,
                      "finish_reason",
                      finish ? finish : (json_array_size(out_calls) ? "tool_calls" : "stop"));
        if (reasoning)
            json_object_set_new(done, "reasoning", json_string(reasoning));
        json_t *usage = json_object_get(turn, "usage");
        if (usage)
            json_object_set(done, "usage", usage);
        add_step(c, "llm.completed", done);
    }
    c->next = p->calls;
    p->calls = c;
    schedule(p, c);
    return c->id;
}

static uint64_t script_complete(ac_provider *base, ac_session *s, const ac_conv *conv,
                                const ac_llm_call_opts *opts, ac_llm_done_fn done, void *ud)
{
    script_provider *p = (script_provider *)base;
    (void)conv;
    (void)opts;
    script_call *c = calloc(1, sizeof *c);
    if (!c || !done) {
        free(c);
        return 0;
    }
    c->s = s;
    c->p = p;
    c->id = ++p->next_id;
    c->done = done;
    c->done_ud = ud;
    size_t idx = next_turn(s);
    json_t *turn = json_array_get(p->turns, idx);
    json_t *err = json_object_get(turn, "error");
    const char *content = json_string_value(json_object_get(turn, "content"));
    char msg[200];
    if (!turn) {
        snprintf(msg, sizeof msg, "the script has no more turns (all %zu used)",
                 json_array_size(p->turns));
    } else if (err) {
        const char *m = json_string_value(json_object_get(err, "message"));
        snprintf(msg, sizeof msg, "%s", m ? m : "scripted failure");
    } else if (!content || !*content) {
        snprintf(msg, sizeof msg, "script turn %zu has no content for a completion", idx + 1);
    } else {
        c->ok = 1;
    }
    c->text = strdup(c->ok ? content : msg);
    if (!c->text) {
        free(c);
        return 0;
    }
    c->next = p->calls;
    p->calls = c;
    schedule(p, c);
    return c->id;
}

static void script_cancel(ac_provider *base, uint64_t id)
{
    script_provider *p = (script_provider *)base;
    for (script_call *c = p->calls; c; c = c->next)
        if (c->id == id) {
            if (c->timer)
                ac_loop_cancel_timer(ac_engine_loop(p->e), c->timer);
            c->timer = 0;
            call_unlink_free(p, c);
            return;
        }
}

static void script_free(ac_provider *base)
{
    script_provider *p = (script_provider *)base;
    while (p->calls) {
        if (p->calls->timer)
            ac_loop_cancel_timer(ac_engine_loop(p->e), p->calls->timer);
        call_unlink_free(p, p->calls);
    }
    json_decref(p->turns);
    free(p);
}

ac_provider *ac_provider_script_new(ac_engine *e, const char *path, const char *text, int delay_ms,
                                    char *err, size_t errcap)
{
    char *buf = NULL;
    if (!text) {
        if (!path) {
            snprintf(err, errcap, "the script provider needs --script FILE");
            return NULL;
        }
        buf = ac_read_file(path, (size_t)256 << 20, NULL);
        if (!buf) {
            snprintf(err, errcap, "cannot read script '%s': %s", path,
                     errno == EFBIG ? "larger than 256 MB" : strerror(errno));
            return NULL;
        }
        text = buf;
    }
    json_t *turns = json_array();
    const char *line = text;
    int lineno = 0;
    while (*line) {
        lineno++;
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        size_t k = 0;
        while (k < n && (line[k] == ' ' || line[k] == '\t' || line[k] == '\r'))
            k++;
        if (k < n && line[k] != '#') {
            json_error_t jerr;
            json_t *t = json_loadb(line, n, 0, &jerr);
            if (!json_is_object(t)) {
                snprintf(err, errcap, "%s:%d:%d: %s", path ? path : "script", lineno,
                         t ? 1 : jerr.column, t ? "a turn must be a JSON object" : jerr.text);
                json_decref(t);
                json_decref(turns);
                free(buf);
                return NULL;
            }
            json_array_append_new(turns, t);
        }
        line += n + (nl ? 1 : 0);
    }
    free(buf);
    script_provider *p = calloc(1, sizeof *p);
    if (!p) {
        json_decref(turns);
        snprintf(err, errcap, "out of memory");
        return NULL;
    }
    p->base.name = "script";
    p->base.start = script_start;
    p->base.complete = script_complete;
    p->base.cancel = script_cancel;
    p->base.free = script_free;
    p->base.release = script_release;
    p->e = e;
    p->turns = turns;
    p->delay_ms = delay_ms < 0 ? 0 : delay_ms;
    return &p->base;
}
