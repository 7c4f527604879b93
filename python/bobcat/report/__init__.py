"""The report and its views of the results store: data (the loader and statistics), tables,
page_tables, shmem_tables, plots, page (the HTML page), compare, export, headline.

Reads the database only through bobcat.evaluation.store. Nothing imported here: `bobcat compare`
must not pay for matplotlib.
"""
