"""The report and its views of the results store: data (runs and samples, statistics), tables and
shmem_tables (the report's tables), plots (its figures), page (the HTML page), compare and export
(`bobcat compare`, `bobcat export`), headline (which numbers the console shows).

Reads the database only through bobcat.evaluation.store. Nothing imported here: `bobcat compare`
must not pay for matplotlib.
"""
