"""What a search found, as a kernel engineer reads it: the Markdown/CSV report (`markdown`) and
the SASS diff with control codes (`sassdiff`)."""
