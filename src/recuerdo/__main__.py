from .doors.cli import main

main()
