// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What health checks report: the health fields of a backend in the
 * `backend list` reply (JSON) and the health metrics families (Prometheus
 * text). Called by the control socket's replies and /metrics, never the
 * other way round.
 */
#include <string.h>
#include "health/health.h"

static void add_str(json_object *o, const char *k, const char *v)
{
	json_object_object_add(o, k, json_object_new_string(v));
}

static void add_int(json_object *o, const char *k, int64_t v)
{
	json_object_object_add(o, k, json_object_new_int64(v));
}

/*
 * health: up/down/unknown ("none" without a check), check: tcp/http, via:
 * the probe path, last: the last probe's result, since: the last transition
 * (UTC) and since_s its age, reason: why, effective_weight: what the table
 * holds (0 down, a step of slow start), probes/probes_failed.
 */
void health_be_json(const struct chlb_svc_cfg *s, const struct chlb_cfg_be *b, json_object *e)
{
	const struct hc *h = health_find(&s->vip, &b->addr);
	const struct hc_svc *hs = health_svc(&s->vip);
	char t[32];
	struct tm tm;

	if (!h) {
		add_str(e, "health", "none");
		add_int(e, "effective_weight", b->weight);
		return;
	}
	add_str(e, "health", h->ck.type == CHLB_CHECK_NONE ? "none" : health_state_name(h->state));
	add_str(e, "check", chlb_check_type_name(h->ck.type));
	add_int(e, "effective_weight", h->eff_weight);
	if (hs && hs->panic)
		json_object_object_add(e, "panic", json_object_new_boolean(true));
	if (h->ck.type == CHLB_CHECK_NONE)
		return;
	/* via vip that cannot work fails without sending: its path is still vip, not direct */
	add_str(e, "via", h->via_vip || h->ck.via == CHLB_VIA_VIP ? "vip" : "direct");
	if (!h->via_vip && h->ck.via == CHLB_VIA_AUTO && h->path_ns && h->path_rc)
		add_str(e, "via_why", h->path_err); /* why auto is direct */
	add_str(e, "last", h->last[0] ? h->last : "-");
	gmtime_r(&h->since_wall, &tm);
	strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%SZ", &tm);
	add_str(e, "since", t);
	add_int(e, "since_s", (int64_t)((chlb_now_ns() - h->since_ns) / 1000000000ull));
	add_int(e, "since_ms", (int64_t)((chlb_now_ns() - h->since_ns) / 1000000ull));
	add_str(e, "reason", h->reason);
	add_int(e, "probes", (int64_t)h->sent);
	add_int(e, "probes_failed", (int64_t)h->failed);
}

/* Label values as the text format wants them (a backend name or VIP has no quotes). */
static void lbl(FILE *f, const char *name, const struct chlb_vip *vip, const char *be,
		const char *extra, unsigned long long v)
{
	char vs[CHLB_ADDRSTR];

	fprintf(f, "%s{vip=\"%s\"", name, chlb_fmt_vip(vip, vs, sizeof(vs)));
	if (be)
		fprintf(f, ",backend=\"%s\"", be);
	fprintf(f, "%s%s} %llu\n", extra ? "," : "", extra ? extra : "", v);
}

static void head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/*
 * One family's samples (the format wants a family whole): every backend with
 * a checker; the effective weight for every backend, as backend list has it
 * (without a checker: the configured weight, what its table holds).
 */
enum fam {
	F_HEALTH,
	F_EFF,
	F_SENT,
	F_FAILED
};

static void be_family(FILE *f, enum fam w)
{
	static const char *const states[] = { "unknown", "up", "down" };
	static const char *const names[] = { "chlb_backend_health", "chlb_backend_effective_weight",
					     "chlb_backend_probes_total",
					     "chlb_backend_probes_failed_total" };
	const struct chlb_state *st = &D.state;
	char x[32];

	for (__u32 i = 0; i < st->nsvc; i++) {
		const struct chlb_svc_cfg *s = &st->svc[i];

		for (__u32 j = 0; j < s->nbe; j++) {
			const struct hc *h = health_find(&s->vip, &s->be[j].addr);

			if (!h && w == F_EFF) {
				lbl(f, names[w], &s->vip, s->be[j].name, NULL, s->be[j].weight);
				continue;
			}
			if (!h || (w != F_EFF && h->ck.type == CHLB_CHECK_NONE))
				continue;
			if (w == F_HEALTH) {
				for (int k = 0; k < 3; k++) {
					snprintf(x, sizeof(x), "state=\"%s\"", states[k]);
					lbl(f, names[w], &s->vip, h->name, x, h->state == k);
				}
			} else {
				lbl(f, names[w], &s->vip, h->name, NULL,
				    w == F_EFF	  ? h->eff_weight
				    : w == F_SENT ? h->sent
						  : h->failed);
			}
		}
	}
}

void health_metrics(FILE *f)
{
	const struct chlb_state *st = &D.state;

	head(f, "chlb_backend_health", "gauge",
	     "1 for the backend's health-check state (unknown, up, down); absent without a check.");
	be_family(f, F_HEALTH);
	head(f, "chlb_backend_effective_weight", "gauge",
	     "The weight the table holds: 0 down, a step during slow start, else configured.");
	be_family(f, F_EFF);
	head(f, "chlb_backend_probes_total", "counter", "Health probes sent to the backend.");
	be_family(f, F_SENT);
	head(f, "chlb_backend_probes_failed_total", "counter",
	     "Health probes that failed (refused, timed out, wrong status).");
	be_family(f, F_FAILED);
	for (int k = 0; k < 2; k++) {
		head(f,
		     k ? "chlb_service_health_all_down_total" : "chlb_service_health_panics_total",
		     "counter",
		     k ? "Times every backend of the service was down with panic 0: no new flows."
		       : "Times fewer than panic% of the service's backends were up: health "
			 "ignored.");
		for (__u32 i = 0; i < st->nsvc; i++) {
			const struct hc_svc *hs = health_svc(&st->svc[i].vip);

			if (hs)
				lbl(f,
				    k ? "chlb_service_health_all_down_total"
				      : "chlb_service_health_panics_total",
				    &st->svc[i].vip, NULL, NULL, k ? hs->all_downs : hs->panics);
		}
	}
}
