// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The tables the data plane serves, as the read-only replies report them
 * (service list, which, the metrics): the published view's tables, each the
 * table chlbd built, or, after a restart and until the rebuild replaces it,
 * the one a previous chlbd left pinned. chlbd keeps no words of those: they
 * are read from the pinned table slot once, kept here while they serve,
 * and fingerprinted by the addresses of the pinned backend slots
 * (chlb_rt_table_fp), so `service list` and the metric are right from the
 * first second and `which` decides by the table packets meet.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "chlbd.h"
#include "served_tables.h"

/* Pinned tables read so far, by table slot; kept while the engine's slot is adopted. */
static struct pinned {
	struct chlb_table t;
	bool has_fp;
	__u32 fp;
	char why[CHLB_ERR_MAX]; /* when no fingerprint: why */
} pinned[CHLB_TABLE_SLOTS];

/* The engine's slot for table slot tslot, or NULL. */
static struct chlb_rt_slot *rt_slot(__u32 tslot)
{
	struct chlb_rt_svc *s = &D.rt->svc[tslot / CHLB_SLOTS_PER_SERVICE];

	return s->used ? &s->slot[tslot % CHLB_SLOTS_PER_SERVICE] : NULL;
}

/* Adopted: used by a view, and holding no table this chlbd built. */
static bool is_adopted(const struct chlb_rt_slot *sl)
{
	return sl && sl->used && !sl->t.nwords;
}

/* Frees what the engine has rebuilt or released since. */
static void sweep(void)
{
	for (__u32 i = 0; i < CHLB_TABLE_SLOTS; i++)
		if (pinned[i].t.words && !is_adopted(rt_slot(i))) {
			chlb_table_free(&pinned[i].t);
			pinned[i].has_fp = false;
		}
}

/* Table slot tslot's words, as the data plane holds them, into t. */
static int read_pinned(__u32 tslot, struct chlb_table *t)
{
	struct chlb_table_hdr hdr;
	int rc = chlb_dp_read_table(D.dp, tslot, &hdr, &t->words);

	t->nwords = rc ? 0 : hdr.words;
	return rc;
}

int served_table(__u32 tslot, struct served_table *out)
{
	struct chlb_rt_slot *sl;
	struct pinned *p;
	int rc;

	memset(out, 0, sizeof(*out));
	out->tslot = tslot;
	if (tslot >= CHLB_TABLE_SLOTS)
		return -ERANGE;
	sweep();
	sl = rt_slot(tslot);
	if (sl && sl->t.nwords) {
		out->t = &sl->t;
		out->has_fp = !chlb_rt_slot_fp(D.rt, &D.rt->svc[tslot / CHLB_SLOTS_PER_SERVICE], sl,
					       &out->fp);
		return 0;
	}
	if (!is_adopted(sl)) {
		snprintf(out->why, sizeof(out->why), "table slot %u holds no table of this chlbd",
			 tslot);
		return -ENOENT;
	}
	/* a table from a previous chlbd: its words are read once */
	out->adopted = true;
	p = &pinned[tslot];
	if (!p->t.words) {
		rc = read_pinned(tslot, &p->t);
		if (rc) {
			snprintf(out->why, sizeof(out->why), "couldn't read table slot %u: %s",
				 tslot, strerror(-rc));
			return rc;
		}
		p->has_fp = !chlb_rt_table_fp(D.rt, p->t.words, p->t.nwords, NULL, 0, &p->fp,
					      p->why, sizeof(p->why));
	}
	out->t = &p->t;
	out->has_fp = p->has_fp;
	out->fp = p->fp;
	if (!p->has_fp)
		snprintf(out->why, sizeof(out->why), "%s", p->why);
	return 0;
}

int served_current(const struct chlb_rt_svc *r, struct served_table *out)
{
	memset(out, 0, sizeof(*out));
	if (!r || !r->nview)
		return -ENOENT;
	return served_table((__u32)(r - D.rt->svc) * CHLB_SLOTS_PER_SERVICE + r->view[0], out);
}

int served_view(const struct chlb_rt_svc *r, struct chlb_service *v)
{
	struct chlb_vip_key key;

	chlb_vip_to_key(&r->vip, &key);
	if (chlb_dp_get_service(D.dp, &key, v) || v->ntables < 1 || v->ntables > CHLB_HISTORY_MAX)
		return -ENOENT;
	return 0;
}
