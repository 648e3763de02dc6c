module example.com/standin/go-multierror

go 1.22
