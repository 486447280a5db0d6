from pimem_index.cli import cli

cli(prog_name="pimem")
