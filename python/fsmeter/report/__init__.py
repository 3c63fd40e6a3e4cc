"""Reports: terminal tables, HTML, exports."""
