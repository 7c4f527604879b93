/* bobcat-options: print libbobcat's knobs (plain, or --markdown for docs/options.md). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bobcat/bobcat.h>

int main(int argc, char **argv)
{
    int markdown = argc > 1 && !strcmp(argv[1], "--markdown");
    if (argc > 1 && !markdown) {
        fprintf(stderr, "usage: bobcat-options [--markdown]\n");
        return 2;
    }
    bobcat_options_print(STDOUT_FILENO, markdown);
    return 0;
}
