"""The `pimem serve` application: Datasette with the plugin on the index, run in the foreground, detached or as a
systemd unit, the commands that need Datasette, and the Pi tool's installer. Above both the library and the plugin;
nothing below imports it."""
