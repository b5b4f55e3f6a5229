"""Terminal worlds: procedural shell tasks in a rootless bubblewrap sandbox."""
