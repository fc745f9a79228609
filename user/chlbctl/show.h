/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Plain-text renderings of chlbd's JSON replies (for people). */
#ifndef CHLBCTL_SHOW_H
#define CHLBCTL_SHOW_H

#include <json-c/json.h>

void show_services(json_object *r);
void show_backends(json_object *r);
void show_stats(json_object *r);
void show_which(json_object *r);
void show_plan(json_object *r);

#endif /* CHLBCTL_SHOW_H */
