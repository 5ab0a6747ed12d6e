#!/usr/bin/env bash
# No credential reaches a tool, an error message or a journal: tool processes
# get a deliberate environment (a default list, "inherit_env", "env") without
# the provider's keys; --header values and user:pass@ in the base URL are
# redacted like the API key.
agentc="$1" httpd="$2"
. "$(dirname "$0")/lib.sh"
need jq
start_server --mode calc
export OPENAI_API_KEY="sk-openai-LEAK-$$" ANTHROPIC_API_KEY="sk-ant-LEAK-$$"
export AGENTC_TEST_KEY="sk-custom-LEAK-$$"          # the key in use (--api-key-env)
export KEY_COPY="$AGENTC_TEST_KEY"                  # same value, another name
export MY_VISIBLE="visible-$$" MY_OTHER="other-$$"  # not in the default list
net=(--base-url "$base" --model m --api-key-env AGENTC_TEST_KEY)

# the model asks for the tool `sleeper` (TOOLSLEEP), here a dump of the environment
cat >"$tmp/default.json" <<'J'
{"tools": [{"name": "sleeper", "description": "dump env",
            "command": ["sh", "-c", "cat >/dev/null; env"], "timeout": "5s"}]}
J
"$agentc" run "${net[@]}" --tools "$tmp/default.json" --journal "$tmp/j1" "TOOLSLEEP" >"$tmp/out1" 2>"$tmp/err1" \
  || fail "run with the env tool failed: $(head -3 "$tmp/err1")"
grep -q 'PATH=' "$tmp/j1" || fail "the tool did not run or lost PATH: $(head -c 400 "$tmp/j1")"
grep -q 'AGENTC_TOOL_NAME=sleeper' "$tmp/j1" || fail "AGENTC_TOOL_NAME missing"
jq -c .body "$tmp/requests" >"$tmp/bodies1" # what went to the model (the headers carry the key)
for f in "$tmp/j1" "$tmp/out1" "$tmp/err1" "$tmp/bodies1"; do
  ! grep -q 'LEAK' "$f" || fail "a key reached the tool: $(grep -o '[A-Z_]*=sk-[a-zA-Z-]*LEAK' "$f" | sort -u | tr '\n' ' ') in $f"
  ! grep -q 'KEY_COPY' "$f" || fail "a variable holding the key reached the tool ($f)"
  ! grep -q 'MY_VISIBLE' "$f" || fail "a variable outside the default list reached the tool ($f)"
done

# inherit_env replaces the default list (patterns allowed, the keys still never pass); env sets
cat >"$tmp/explicit.json" <<'J'
{"tools": [{"name": "sleeper", "description": "dump env",
            "command": ["sh", "-c", "cat >/dev/null; env"], "timeout": "5s",
            "inherit_env": ["MY_*", "PATH", "OPENAI_API_KEY", "KEY_COPY", "AGENTC_TEST_KEY"],
            "env": {"GREETING": "hello there", "MY_OTHER": "overridden"}}]}
J
"$agentc" run "${net[@]}" --tools "$tmp/explicit.json" --journal "$tmp/j2" "TOOLSLEEP" >"$tmp/out2" 2>"$tmp/err2" \
  || fail "run with inherit_env failed: $(head -3 "$tmp/err2")"
grep -q "MY_VISIBLE=visible-$$" "$tmp/j2" || fail "inherit_env MY_* not passed"
grep -q 'GREETING=hello there' "$tmp/j2" || fail "env GREETING not passed"
grep -q 'MY_OTHER=overridden' "$tmp/j2" || fail "env does not override an inherited variable"
! grep -q "MY_OTHER=other-$$" "$tmp/j2" || fail "MY_OTHER passed twice"
! grep -q 'HOME=' "$tmp/j2" || fail "inherit_env should replace the default list (HOME passed)"
jq -c .body "$tmp/requests" >"$tmp/bodies2"
! grep -q 'LEAK' "$tmp/j2" "$tmp/bodies2" || fail "inherit_env let a key through"

# a bad inherit_env / env is refused when the file is loaded
echo '{"tools": [{"name": "t", "description": "d", "command": ["true"], "inherit_env": ["A=B"]}]}' >"$tmp/bad.json"
"$agentc" run "${net[@]}" --tools "$tmp/bad.json" hi >/dev/null 2>"$tmp/err3" && fail "bad inherit_env accepted"
grep -q 'inherit_env' "$tmp/err3" || fail "bad inherit_env message: $(cat "$tmp/err3")"

# header credentials and user:pass@ in the base URL: never in messages, --jsonl lines or journals
hdr="sk-hdr-secret-$$" pw="hunter2-$$"
cred_base="http://someone:$pw@127.0.0.1:$port/v1"
env -u OPENAI_API_KEY "$agentc" run --base-url "$cred_base" --model m --header "Authorization: Bearer $hdr" \
  --header "X-Other-Token: tok-$hdr" --param max_retries=0 --journal "$tmp/j4" "ECHOHDR hi" >"$tmp/out4" 2>"$tmp/err4"
[ $? -ne 0 ] || fail "the 401 should fail the run"
grep -q '401' "$tmp/err4" || fail "no 401 in the message: $(cat "$tmp/err4")"
grep -q 'redacted' "$tmp/err4" || fail "nothing redacted in: $(cat "$tmp/err4")"
tail -n 1 "$tmp/requests" | grep -q "Bearer $hdr" || fail "the header was not sent"
env -u OPENAI_API_KEY "$agentc" run --base-url "$cred_base" --model m --header "Authorization: Bearer $hdr" \
  --param max_retries=0 --jsonl "ECHOHDR hi" >"$tmp/out5" 2>"$tmp/err5"
basic=$(printf 'someone:%s' "$pw" | base64)
for f in "$tmp/out4" "$tmp/err4" "$tmp/j4" "$tmp/out5" "$tmp/err5"; do
  ! grep -q -e "$hdr" -e "$pw" -e "$basic" "$f" || fail "a credential is in $f: $(grep -o -e ".\{20\}$hdr" -e ".\{20\}$pw" "$f" | head -3)"
done
has_line "$tmp/j4" '.ev == "llm.failed" and (tostring | test("redacted"))' || fail "no redacted llm.failed in the journal"
