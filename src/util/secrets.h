/* Credentials the program was configured with, gathered in one place so that
 * every path that could leak them (failure messages, journals, tool
 * environments) works from the same list.
 *
 * A secret is:
 * - the API key, whatever its length;
 * - the value of each extra request header ("Name: value", the value without
 *   surrounding blanks) and, when the value has the form "Scheme token" (e.g.
 *   "Bearer sk-..."), the token on its own;
 * - the userinfo of the base URL ("user:pass" in http://user:pass@host/), its
 *   password part and its base64 form (the Basic credentials curl sends).
 * Header and URL parts shorter than AC_SECRET_MIN_LEN bytes are not listed:
 * masking every "1" or "json" in a message would hide the message and protect
 * nothing. */
#ifndef AGENTC_UTIL_SECRETS_H
#define AGENTC_UTIL_SECRETS_H

#include <stddef.h>

#define AC_SECRET_MIN_LEN 6

/* A new NULL-terminated list of distinct secrets (see above), longest first
 * (so a secret that contains another is masked whole). Every argument may be
 * NULL. Returns NULL only when out of memory. Free with ac_secrets_free. */
char **ac_secrets_collect(const char *api_key, const char *base_url, const char *const *headers);

/* Zeroes and frees the list. NULL is a no-op. */
void ac_secrets_free(char **secrets);

/* 1 if s equals one of the secrets. */
int ac_secrets_match(char *const *secrets, const char *s);

/* url with its userinfo (the part before '@' in the authority) replaced by
 * "[redacted]", as a new string; a URL without userinfo is copied as is.
 * NULL when out of memory. */
char *ac_url_redact_userinfo(const char *url);

/* url with its userinfo and its '@' left out (a URL without a scheme read from its start), as
 * a new string; NULL when out of memory. */
char *ac_url_strip_userinfo(const char *url);

#endif
