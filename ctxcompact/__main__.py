from ctxcompact.cli import main

main()
