from rankci.cli import main

raise SystemExit(main())
