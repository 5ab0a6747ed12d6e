/*
 * state.c - a session's State document: created from the spawn event,
 * changed by the writes events carry, saved and restored, shown to the
 * model (state.h).
 */
#include "session/state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/session_int.h"
#include "tools/schema.h"
#include "tools/stateref.h"

ac_state *ac_state_new(const json_t *decl)
{
    ac_state *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    const json_t *init = json_object_get(decl, "initial");
    const json_t *schema = json_object_get(decl, "schema");
    st->declared = json_is_object(decl);
    st->doc = json_is_object(init) ? json_deep_copy(init) : json_object();
    if (!st->doc)
        goto fail;
    if (json_is_object(schema)) {
        char why[256];
        st->schema_json = json_deep_copy(schema);
        st->schema = st->schema_json ? ac_schema_compile(st->schema_json, why, sizeof why) : NULL;
        if (!st->schema)
            goto fail;
    }
    return st;
fail:
    ac_state_free(st);
    return NULL;
}

void ac_state_free(ac_state *st)
{
    if (!st)
        return;
    json_decref(st->doc);
    json_decref(st->schema_json);
    ac_schema_free(st->schema);
    free(st);
}

int ac_state_accepts(const ac_state *st, const json_t *doc, char *err, size_t errcap)
{
    if (!json_is_object(doc)) {
        snprintf(err, errcap, "the State must be a JSON object");
        return 0;
    }
    return !st || !st->schema || ac_schema_validate(st->schema, doc, err, errcap);
}

void ac_state_apply(ac_state *st, const json_t *writes)
{
    size_t i;
    json_t *w;
    if (!st || !json_is_array(writes))
        return;
    json_array_foreach(writes, i, w)
    {
        const char *path = json_string_value(json_object_get(w, "path"));
        json_t *value = json_object_get(w, "value");
        ac_ref_expr e;
        char err[256];
        if (!path || !value || ac_ref_parse(path, strlen(path), &e, err, sizeof err) < 0)
            continue;                         /* the run wrote it: it parses */
        json_t *copy = json_deep_copy(value); /* the event's data is not the State's */
        if (copy && e.n == 1)
            (void)ac_ref_set(&st->doc, &e.paths[0], copy, err, sizeof err);
        json_decref(copy);
        ac_ref_expr_free(&e);
    }
}

/* The session has a State: declared, or written to by a call. */
static int has_state(const ac_session *s)
{
    return s && s->state && (s->state->declared || json_object_size(s->state->doc) > 0);
}

json_t *ac_session_state_json(const ac_session *s)
{
    if (!has_state(s))
        return NULL;
    return json_deep_copy(s->state->doc);
}

char *ac_session_state_doc_json(const ac_session *s)
{
    if (!has_state(s))
        return NULL;
    return json_dumps(s->state->doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
}

char *ac_session_state_save(const ac_session *s)
{
    if (!s)
        return NULL;
    if (!s->state)
        return strdup("{}");
    return json_dumps(s->state->doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
}

int ac_session_state_restore(ac_session *s, const char *json, char *err, size_t errcap)
{
    if (!s || !json) {
        snprintf(err, errcap, "ac_session_state_restore needs a session and a document");
        return -1;
    }
    json_error_t je;
    json_t *doc = json_loads(json, JSON_REJECT_DUPLICATES, &je);
    if (!doc) {
        snprintf(err, errcap, "the State is not JSON: %s", je.text);
        return -1;
    }
    char why[400];
    if (!ac_state_accepts(s->state, doc, why, sizeof why)) {
        snprintf(err, errcap, "the State cannot be restored: %s", why);
        json_decref(doc);
        return -1;
    }
    if (!s->state && !(s->state = ac_state_new(NULL))) {
        json_decref(doc);
        snprintf(err, errcap, "out of memory");
        return -1;
    }
    json_decref(s->state->doc);
    s->state->doc = doc;
    return 0;
}

json_t *ac_state_snapshot_save(const ac_session *s)
{
    const ac_state *st = s ? s->state : NULL;
    json_t *doc = st ? json_deep_copy(st->doc) : json_object();
    json_t *schema = st && st->schema_json ? json_deep_copy(st->schema_json) : NULL;
    json_t *o = doc ? json_pack("{s:b, s:o, s:o*}", "declared", st && st->declared, "doc", doc,
                                "schema", schema)
                    : NULL;
    if (!doc)
        json_decref(schema);
    return o;
}

int ac_state_snapshot_restore(ac_session *s, json_t *v, char *err, size_t errcap)
{
    json_t *doc = json_object_get(v, "doc"), *schema = json_object_get(v, "schema");
    if (!s || !json_is_object(v) || !json_is_object(doc) || (schema && !json_is_object(schema))) {
        snprintf(err, errcap, "the saved State is not {\"declared\", \"doc\": {...}, \"schema\"}");
        return AC_EINVAL;
    }
    json_t *decl = json_pack("{s:O, s:O?}", "initial", doc, "schema", schema);
    ac_state *st = decl ? ac_state_new(decl) : NULL;
    json_decref(decl);
    if (!st) {
        snprintf(err, errcap,
                 schema ? "the saved State's schema does not compile"
                        : "out of memory restoring the State");
        return schema ? AC_EINVAL : AC_ENOMEM;
    }
    char why[400];
    if (!ac_state_accepts(st, st->doc, why, sizeof why)) {
        snprintf(err, errcap, "the saved State is refused by its schema: %s", why);
        ac_state_free(st);
        return AC_EINVAL;
    }
    st->declared = json_is_true(json_object_get(v, "declared"));
    ac_state_free(s->state);
    s->state = st;
    return AC_OK;
}

char *ac_state_context_text(const ac_session *s)
{
    /* both are llm_request's, declared by the spec or by its contract (contracts.c) */
    const ac_param_value *in = s ? s->e->p_state_in_context : NULL;
    if (!s || !s->state || !s->state->declared || !in || in->ival <= 0 ||
        !s->e->p_state_context_max)
        return NULL;
    int64_t cap = s->e->p_state_context_max->ival;
    char *doc = json_dumps(s->state->doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!doc)
        return NULL;
    static const char lead[] =
        "The session's State (a JSON document). A tool argument that is exactly "
        "\"" AC_REF_DAGGER "state.PATH\" (keys with '.', indexes as [N]) is replaced by the value "
        "there before the tool runs; add \"_outputPath\": \"" AC_REF_DAGGER
        "state.PATH\" to a call "
        "to store its result there (\"A || B\": success to A, failure to B; \"A && B\": to each). "
        "Current State:\n";
    size_t n = strlen(doc), keep = n;
    char note[96] = "";
    if (cap >= 0 && (int64_t)n > cap) {
        keep = (size_t)cap;
        while (keep > 0 && ((unsigned char)doc[keep] & 0xC0) == 0x80)
            keep--; /* never cut a UTF-8 sequence */
        snprintf(note, sizeof note, "\n[the State is cut here: %zu of %zu bytes shown]", keep, n);
    }
    size_t total = sizeof lead + keep + strlen(note) + 1;
    char *out = malloc(total);
    if (out)
        snprintf(out, total, "%s%.*s%s", lead, (int)keep, doc, note);
    free(doc);
    return out;
}
