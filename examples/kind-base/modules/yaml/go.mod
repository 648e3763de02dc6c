module example.com/standin/yaml

go 1.22
