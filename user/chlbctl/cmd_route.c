// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * chlbctl route list|withdraw|announce: chlbd's route export (--route-table,
 * docs/operations.md "Several LB hosts behind ECMP (BGP)"). withdraw empties
 * the exported table and keeps it empty, so the routing daemon withdraws the
 * VIPs and the routers move the flows to the other LBs while chlbd keeps
 * running (maintenance); announce undoes it; a restart announces too, once
 * ready. list says whether chlbd is ready (user/chlbd/ready.h) and, when
 * not, why its routes are withheld; announce makes it ready at once.
 */
#include <stdio.h>
#include <string.h>
#include "chlbctl.h"
#include "client.h"

static const char *const verbs[] = { "list", "withdraw", "announce", NULL };

static void print_addrs(json_object *r, const char *key)
{
	json_object *a;
	size_t n;

	if (!json_object_object_get_ex(r, key, &a) || !json_object_is_type(a, json_type_array))
		return;
	n = json_object_array_length(a);
	for (size_t i = 0; i < n; i++)
		printf(" %s", json_object_get_string(json_object_array_get_idx(a, i)));
	if (!n)
		printf(" none");
}

static void show_routes(json_object *r)
{
	json_object *v;
	long long table = json_object_object_get_ex(r, "route_table", &v)
			      ? (long long)json_object_get_int64(v)
			      : 0;
	bool withdrawn =
	    json_object_object_get_ex(r, "withdrawn", &v) && json_object_get_boolean(v);
	/* a chlbd from before readiness has no "ready": it announced at once */
	bool ready = !json_object_object_get_ex(r, "ready", &v) || json_object_get_boolean(v);
	const char *why =
	    json_object_object_get_ex(r, "withheld", &v) ? json_object_get_string(v) : "";

	if (!table) {
		printf("route export off (chlbd runs without --route-table)\n");
		printf("  ready:    %s%s\n", ready ? "yes" : "no: ", ready ? "" : why);
		return;
	}
	printf("route table %lld%s\n", table, withdrawn ? ": withdrawn" : "");
	if (ready)
		printf("  ready:    yes\n");
	else
		printf("  ready:    no: routes withheld: %s\n", why);
	printf("  routes:  ");
	print_addrs(r, "routes");
	printf("\n  servable:");
	print_addrs(r, "servable");
	printf("\n");
}

int do_route(int argc, char **argv)
{
	const char *verb = NULL;
	json_object *r;
	char line[32];
	int rc;

	/* withdraw takes the LB out of the ECMP set: never by a prefix ('route w') */
	for (int i = 0; argc >= 1 && argv[0][0] && verbs[i]; i++)
		if (!strcmp(verbs[i], argv[0]) ||
		    (strcmp(verbs[i], "withdraw") && !strncmp(verbs[i], argv[0], strlen(argv[0]))))
			verb = verb ? "" : verbs[i];
	if (argc < 1)
		return p_usage("'route': missing command (list, withdraw, announce)");
	if (!verb || !*verb)
		return p_usage("'%s': unknown route command (expected list, withdraw, announce)",
			       argv[0]);
	if (argc > 1)
		return p_usage("route %s: unexpected argument '%s'", verb, argv[1]);
	snprintf(line, sizeof(line), "route %s", verb);
	rc = ctl_check_statement(line);
	strcat(line, "\n");
	if (!rc)
		rc = ctl_request(line, &r);
	if (rc)
		return rc;
	if (ctl.json)
		ctl_print_json(r);
	else if (!strcmp(verb, "list"))
		show_routes(r);
	json_object_put(r);
	return CHLBCTL_EXIT_OK;
}
