/*  selftest.c - confine_selftest(): the pure parts (policy, report) checked
    in-process. The sandbox itself is tested from outside, with real
    processes (tests/security). */
#include "confine.h"

#include <stdio.h>
#include <string.h>

#define CHECK(cond)                                                             \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf (stderr, "confine_selftest: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                         \
        }                                                                       \
    } while (0)

int
confine_selftest (bool verbose)
{
    int failures = 0;
    char err[256];
    confine_policy_t *policy = confine_policy_new ();
    CHECK (policy->uid == 1000 && policy->network == CONFINE_NET_NONE && policy->allow_degraded == 0);
    json_t *json = json_pack ("{s:s, s:i, s:[s]}", "network", "loopback", "pids", 64, "allow_degraded", "cgroup");
    CHECK (confine_policy_load_json (policy, json, err, sizeof err) == 0);
    CHECK (policy->network == CONFINE_NET_LOOPBACK && policy->pids == 64);
    CHECK (policy->allow_degraded == 1u << CONFINE_LAYER_CGROUP);
    json_decref (json);
    json = json_pack ("{s:b}", "netwrok", 1);
    CHECK (confine_policy_load_json (policy, json, err, sizeof err) < 0 && strstr (err, "netwrok"));
    json_decref (json);
    confine_policy_destroy (&policy);
    CHECK (policy == NULL);

    confine_report_t *report = confine_report_new ();
    confine_report_set (report, CONFINE_LAYER_SECCOMP, CONFINE_ACTIVE, "x%d", 1);
    json = confine_report_json (report);
    CHECK (json_object_size (json) == 1);
    CHECK (strcmp (json_string_value (json_object_get (json_object_get (json, "seccomp"), "reason")), "x1") == 0);
    json_decref (json);
    confine_report_destroy (&report);
    if (verbose)
        printf ("confine_selftest: %s\n", failures ? "FAILED" : "OK");
    return failures ? -1 : 0;
}
