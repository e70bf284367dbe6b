/*
 * report_internal.h - what report.c shares with the report's sections in
 * files of their own (report_crossover.c, report_holdout.c): the plots kept for inlining,
 * writing a file into the output folder, and stored text as a Markdown
 * table cell.
 */
#ifndef MT_REPORT_INTERNAL_H
#define MT_REPORT_INTERNAL_H

#include <stddef.h>

#include "db/crossover.h"
#include "db/db.h"
#include "svg.h"

/* Every plot, by file name, to inline where the Markdown refers to it. */
typedef struct mt_report_plots {
    char name[64][128];
    char *svg[64];
    int n;
} mt_report_plots;

/* Keeps a copy of svg under name (nothing past 64 plots). */
void mt_report_keep_plot(mt_report_plots *pl, const char *name, const mt_text *svg);

/* Writes text into dir/name; MT_ERR_IO naming the path. */
mt_status mt_report_write_file(const char *dir, const char *name, const char *text, size_t len);

/* Text from the database as one Markdown table cell, nothing more
 * (report.c says why); rotates over four buffers: up to four per printf. */
const char *mt_report_md_cell(const void *text);

/* The crossover section (report_crossover.c): per measured device, head
 * count and dtypes among p[0..n) (mt_db_load_crossover's order), a chart
 * of both forms' time against sq at each measured context with the
 * boundary marked, and a table of the points.  Nothing when n is 0. */
void mt_report_crossover(const mt_crossover_point *p, int n, mt_report_plots *plots, mt_text *md, const char *out_dir,
                         int *n_plots);

/* The between-keys section (report_holdout.c): `mla-tune holdout`'s
 * figures per group of decode keys of `arch` (NULL: all) in db.  Nothing
 * when the file has no decode key. */
void mt_report_holdout(mt_db *db, const char *arch, mt_text *md);

#endif
