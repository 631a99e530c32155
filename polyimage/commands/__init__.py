"""The `polyimage` command's sub-commands (polyimage.commands.cli is the entry point): its parser, a
handler per command, and what they run: the apps' runner, the benches, batches on Dask, export,
the CPU targets and the bench's graphs. Imports nothing, so that `--help` stays quick."""
